"""Shared pieces of every architecture module: config args, tensor shapes, ArchSpec.

Why: an architecture file should read like its modelling code's `__init__`s:
which projections, norms and experts a layer has. The helpers here turn those
into logical tensors (HF names, exact shapes), so weights from config are summed
by the same code that sums real safetensors headers.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from ...core import dtypes
from ...core.constants import MAX_CONTEXT, MAX_HIDDEN, MAX_LAYERS, MAX_VOCAB
from ...core.errors import ConfigError
from ...core.spec import LayerSpec, MoESpec, MtpSpec, TensorInfo, make_tensor

# Keys whose values must be positive and below a plausibility bound.
_BOUNDS = {
    "hidden_size": MAX_HIDDEN, "num_hidden_layers": MAX_LAYERS, "vocab_size": MAX_VOCAB,
    "max_position_embeddings": MAX_CONTEXT, "intermediate_size": MAX_HIDDEN * 8,
    "num_attention_heads": 65_536, "num_key_value_heads": 65_536, "head_dim": 65_536,
    # other spellings of the same sizes (loops run over layer counts: each must be bounded)
    "num_layers": MAX_LAYERS, "n_layer": MAX_LAYERS, "n_layers": MAX_LAYERS, "n_embed": MAX_HIDDEN,
    "padded_vocab_size": MAX_VOCAB, "ffn_hidden_size": MAX_HIDDEN * 8, "num_nextn_predict_layers": MAX_LAYERS,
    "mtp_num_hidden_layers": MAX_LAYERS, "kv_channels": 65_536,
}
_DEFAULT_BOUND = 1 << 31

# from_dict returns the class it was called on (an arch module's Args, not BaseArgs)
_ArgsT = TypeVar("_ArgsT", bound="BaseArgs")


def _allows(tp: Any, kind: type) -> bool:
    if tp is kind:
        return True
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_allows(a, kind) for a in typing.get_args(tp))
    return False


@dataclass
class BaseArgs:
    """Config keys an architecture reads, under their HF names; unknown keys are ignored.

    `defaults_used` records which keys were absent and took the class default, so the
    ledger can say "config (transformers default)" for them.
    """

    model_type: str = ""
    torch_dtype: str | None = None
    quantization_config: dict | None = None
    bos_token_id: int | list | None = None
    eos_token_id: int | list | None = None
    defaults_used: tuple[str, ...] = field(default=(), repr=False)

    REQUIRED: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_dict(cls: type[_ArgsT], params: dict[str, Any], *, origin: str = "config.json",
                  nested: bool = False) -> _ArgsT:
        """Build Args from a raw config dict, checking types and plausible sizes.

        `nested`: the dict is a wrapper's text_config, which transformers completes with the text
        class's defaults (LlavaConfig builds LlamaConfig(**text_config)): required keys may be absent.

        Raises:
            ConfigError: a required key is missing, or a value has the wrong type or size.
        """
        hints = typing.get_type_hints(cls)
        # fields outside __init__ (qwen3_next.resaved_text) are set after construction, never read from config
        names = [f.name for f in dataclasses.fields(cls) if f.name != "defaults_used" and f.init]
        for key in () if nested else cls.REQUIRED:
            if params.get(key) is None:
                raise ConfigError(f"Cannot size the model from '{origin}': required key '{key}' is missing "
                                  f"(model_type '{params.get('model_type', '?')}').", origin, key=key)
        kwargs: dict[str, Any] = {}
        for name in names:
            if name not in params:
                continue
            if params[name] is None:
                # An explicit null overrides a class default only where the key may be None
                # (Mistral v0.3 writes "sliding_window": null over MistralConfig's 4096).
                if _allows(hints.get(name), type(None)):
                    kwargs[name] = None
                continue
            kwargs[name] = _check(name, params[name], hints.get(name), origin)
        # a default of None assumes nothing (the module derives the figure); any other default is an assumption
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        used = tuple(n for n in names if n not in kwargs and defaults.get(n) is not None
                     and n not in ("torch_dtype", "quantization_config", "model_type"))
        return cls(**kwargs, defaults_used=used)


def _check(name: str, value: Any, tp: Any, origin: str) -> Any:
    """Type- and range-check one config value against its annotation."""
    def bad(expected: str) -> ConfigError:
        return ConfigError(f"Cannot use '{origin}': key '{name}' must be {expected} "
                           f"(got {value!r:.60}).", origin, key=name)

    if tp is None or tp is Any:
        return value
    if _allows(tp, int) and not _allows(tp, float):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 0 or value > _BOUNDS.get(name, _DEFAULT_BOUND):
                raise bad(f"between 0 and {_BOUNDS.get(name, _DEFAULT_BOUND)}")
            return value
        if _allows(tp, list) and isinstance(value, list):
            return value
        if _allows(tp, str) and isinstance(value, str):
            return value
        raise bad("an integer")
    if _allows(tp, bool) and not isinstance(value, bool):
        raise bad("true or false")
    if _allows(tp, float) and not _allows(tp, str) and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or value != value):
        raise bad("a number")
    if _allows(tp, list) and not _allows(tp, int) and not isinstance(value, list):
        raise bad("a list")
    if _allows(tp, dict) and not isinstance(value, dict):
        raise bad("an object")
    if _allows(tp, str) and not _allows(tp, int) and not _allows(tp, dict) and not isinstance(value, str):
        raise bad("a string")
    return value


def require_positive(args: BaseArgs, *names: str, origin: str = "config.json") -> None:
    """Sizes that divide or multiply must be >= 1 (0 heads or 0 layers is not a model)."""
    for n in names:
        v = getattr(args, n)
        if v is None or v < 1:
            raise ConfigError(f"Cannot size the model from '{origin}': key '{n}' must be at least 1 "
                              f"(got {v!r}).", origin, key=n)


@dataclass(frozen=True)
class ArchSpec:
    """What an architecture module derives from a config: shapes, layer kinds, tensors."""

    layers: tuple[LayerSpec, ...]
    hidden: int
    intermediate: int
    vocab: int
    tied: bool
    max_context: int
    dtype: str
    tensors: tuple[TensorInfo, ...]
    moe: MoESpec | None = None
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    state_dtype: str | None = None
    llamacpp_swa: bool = True
    notes: tuple[str, ...] = ()
    defaults_used: tuple[str, ...] = ()
    mtp: MtpSpec | None = None  # MTP layers the checkpoint ships beyond the decoder (config-derived)
    mtp_tensors: tuple[TensorInfo, ...] = ()  # their tensors, so a quantization_config re-sizes them too
    read_keys: frozenset[str] = frozenset()  # config keys the architecture's Args read (confidence.py)
    guesses: tuple[str, ...] = ()  # what the module could not back (confidence "low" with these reasons)
    # tensors the checkpoint stores that no engine loads (a tied lm_head copy): checkpoint_bytes only
    stored_tensors: tuple[TensorInfo, ...] = ()


def mtp_spec(t: Tensors, layers: int) -> MtpSpec | None:
    """MTP layers sized from config shapes: the tensors a module built for them in `t`."""
    if not layers or not t.items:
        return None
    return MtpSpec(layers=layers, params=sum(x.numel for x in t.items), nbytes=sum(x.nbytes for x in t.items),
                   source="config")


def finish(args: Any, t: Tensors, layers: list[LayerSpec], *, dtype_known: bool, moe: MoESpec | None = None,
           notes: list[str] | tuple[str, ...] = (), **extra: Any) -> ArchSpec:
    """The ArchSpec every architecture returns: its standard config keys plus the layers and tensors built."""
    bos = token_ids(args.bos_token_id)
    notes = [*notes, *([] if dtype_known else ["config has no torch_dtype/dtype: weights assumed bf16"])]
    return ArchSpec(layers=tuple(layers), hidden=args.hidden_size, intermediate=args.intermediate_size,
                    vocab=args.vocab_size, tied=args.tie_word_embeddings, max_context=args.max_position_embeddings,
                    dtype=t.dtype, tensors=tuple(t.items), moe=moe, bos_token_id=bos[0] if bos else None,
                    eos_token_ids=token_ids(args.eos_token_id), notes=tuple(notes),
                    defaults_used=args.defaults_used, **extra)


def config_dtype(args: BaseArgs) -> tuple[str, bool]:
    """Storage format of the weights per config (`torch_dtype`/`dtype`); BF16 assumed if absent."""
    raw = args.torch_dtype
    if isinstance(raw, str) and dtypes.is_known(raw.replace("torch.", "")):
        return dtypes.canonical(raw.replace("torch.", "")), True
    return "BF16", False


def token_ids(value: Any) -> tuple[int, ...]:
    if isinstance(value, bool):
        return ()
    if isinstance(value, int):
        return (value,)
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, int) and not isinstance(v, bool))
    return ()


class Tensors:
    """Collects logical tensors (HF names, shapes) at one storage format."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype
        self.items: list[TensorInfo] = []

    def add(self, name: str, shape: tuple[int, ...], group: str, dtype: str | None = None) -> None:
        self.items.append(make_tensor(name, shape, dtype or self.dtype, group))

    # --- building blocks (shapes follow HF nn.Linear: [out_features, in_features]) ---
    def linear(self, name: str, d_in: int, d_out: int, group: str, bias: bool = False) -> None:
        self.add(f"{name}.weight", (d_out, d_in), group)
        if bias:
            self.add(f"{name}.bias", (d_out,), "norm")

    def norm(self, name: str, width: int, bias: bool = False) -> None:
        self.add(f"{name}.weight", (width,), "norm")
        if bias:
            self.add(f"{name}.bias", (width,), "norm")

    def embeddings(self, vocab: int, hidden: int, tied: bool, prefix: str = "model.", norm_bias: bool = False) -> None:
        # embed [vocab, hidden]; an untied lm_head is a second [vocab, hidden] matrix.
        self.add(f"{prefix}embed_tokens.weight", (vocab, hidden), "embedding")
        self.norm(f"{prefix}norm", hidden, bias=norm_bias)
        if not tied:
            self.add("lm_head.weight", (vocab, hidden), "lm_head")

    def attention(self, p: str, *, hidden: int, q_heads: int, kv_heads: int, head_dim: int,
                  head_dim_v: int | None = None, qkv_bias: bool = False, o_bias: bool = False,
                  qk_norm: str | None = None, q_gate: bool = False, sinks: bool = False) -> None:
        """q/k/v/o projections; qk_norm "head" (per head_dim, Qwen3/Gemma3) or "full" (OLMo2)."""
        hv = head_dim_v or head_dim
        self.linear(f"{p}.q_proj", hidden, q_heads * head_dim * (2 if q_gate else 1), "attention", qkv_bias)
        self.linear(f"{p}.k_proj", hidden, kv_heads * head_dim, "attention", qkv_bias)
        self.linear(f"{p}.v_proj", hidden, kv_heads * hv, "attention", qkv_bias)
        self.linear(f"{p}.o_proj", q_heads * hv, hidden, "attention", o_bias)
        if qk_norm == "head":
            self.norm(f"{p}.q_norm", head_dim)
            self.norm(f"{p}.k_norm", head_dim)
        elif qk_norm == "full":
            self.norm(f"{p}.q_norm", q_heads * head_dim)
            self.norm(f"{p}.k_norm", kv_heads * head_dim)
        if sinks:
            self.add(f"{p}.sinks", (q_heads,), "norm")

    def mla(self, p: str, *, hidden: int, heads: int, q_lora_rank: int | None, kv_lora_rank: int, nope: int,
            rope: int, v_dim: int, bias: bool = False) -> None:
        """DeepSeek-V2 multi-head latent attention (modeling_deepseek_v2.py): q_proj, or q_a / q_a_layernorm / q_b
        under a q LoRA; kv_a_proj_with_mqa to the latent + the shared rope key, kv_a_layernorm, kv_b_proj back to
        per-head nope keys and values, o_proj. `bias` (attention_bias) on q_a, kv_a and o_proj."""
        qk = nope + rope
        if q_lora_rank:
            self.linear(f"{p}.q_a_proj", hidden, q_lora_rank, "attention", bias)
            self.norm(f"{p}.q_a_layernorm", q_lora_rank)
            self.linear(f"{p}.q_b_proj", q_lora_rank, heads * qk, "attention")
        else:
            self.linear(f"{p}.q_proj", hidden, heads * qk, "attention")
        self.linear(f"{p}.kv_a_proj_with_mqa", hidden, kv_lora_rank + rope, "attention", bias)
        self.norm(f"{p}.kv_a_layernorm", kv_lora_rank)
        self.linear(f"{p}.kv_b_proj", kv_lora_rank, heads * (nope + v_dim), "attention")
        self.linear(f"{p}.o_proj", heads * v_dim, hidden, "attention", bias)

    def mlp(self, p: str, hidden: int, inter: int, *, gated: bool = True, bias: bool = False,
            group: str = "ffn") -> None:
        """Gated MLP: gate/up [inter, hidden] + down [hidden, inter]; plain MLP drops the gate."""
        if gated:
            self.linear(f"{p}.gate_proj", hidden, inter, group, bias)
        self.linear(f"{p}.up_proj", hidden, inter, group, bias)
        self.linear(f"{p}.down_proj", inter, hidden, group, bias)

    def experts(self, p: str, hidden: int, n: int, inter: int, *, gated: bool = True,
                bias: bool = False, dtype: str | None = None) -> None:
        """n routed experts as fused 3-D tensors (transformers v5 layout): all resident."""
        up = 2 * inter if gated else inter
        self.add(f"{p}.experts.gate_up_proj", (n, up, hidden), "experts", dtype)
        self.add(f"{p}.experts.down_proj", (n, hidden, inter), "experts", dtype)
        if bias:
            self.add(f"{p}.experts.gate_up_proj_bias", (n, up), "norm")
            self.add(f"{p}.experts.down_proj_bias", (n, hidden), "norm")

    def router(self, p: str, hidden: int, n: int, *, bias: bool = False, correction_bias: bool = False) -> None:
        self.add(f"{p}.gate.weight", (n, hidden), "other")
        if bias:
            self.add(f"{p}.gate.bias", (n,), "norm")
        if correction_bias:
            self.add(f"{p}.gate.e_score_correction_bias", (n,), "norm")

    def mamba2(self, p: str, *, hidden: int, n_heads: int, head_dim: int, n_groups: int, d_state: int,
               d_conv: int, conv_bias: bool = True, proj_bias: bool = False, gated_norm: bool = True) -> tuple[int, int]:
        """Mamba2 mixer (modeling_mamba2/nemotron_h/falcon_h1); returns (conv_dim, ssm state elems)."""
        d_inner = n_heads * head_dim
        conv_dim = d_inner + 2 * n_groups * d_state
        # in_proj -> [z (d_inner), xBC (conv_dim), dt (n_heads)]
        self.linear(f"{p}.in_proj", hidden, d_inner + conv_dim + n_heads, "recurrent", proj_bias)
        self.add(f"{p}.conv1d.weight", (conv_dim, 1, d_conv), "other")
        if conv_bias:
            self.add(f"{p}.conv1d.bias", (conv_dim,), "norm")
        for name in ("dt_bias", "A_log", "D"):
            self.add(f"{p}.{name}", (n_heads,), "norm")
        if gated_norm:
            self.norm(f"{p}.norm", d_inner)
        self.linear(f"{p}.out_proj", d_inner, hidden, "recurrent", proj_bias)
        # SSM state per sequence: n_heads x head_dim x d_state
        return conv_dim, n_heads * head_dim * d_state

    def gated_deltanet(self, p: str, *, hidden: int, k_heads: int, v_heads: int, k_dim: int, v_dim: int,
                       kernel: int, split: bool = False) -> tuple[int, int]:
        """Gated DeltaNet (Qwen3-Next / Qwen3.5 linear attention); returns (conv_dim, state elems).

        Qwen3-Next fuses the input projections (in_proj_qkvz, in_proj_ba: modeling_qwen3_next.py:613-614);
        Qwen3.5 (`split`) keeps four (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a: modeling_qwen3_5.py:540-543,
        modeling_qwen3_5_moe.py:557-560). The same bytes, but a quantised checkpoint names them in its
        ignore lists (an AutoRound AWQ export keeps in_proj_a/b in fp16)."""
        key_dim, value_dim = k_heads * k_dim, v_heads * v_dim
        conv_dim = 2 * key_dim + value_dim
        if split:
            self.linear(f"{p}.in_proj_qkv", hidden, 2 * key_dim + value_dim, "recurrent")
            self.linear(f"{p}.in_proj_z", hidden, value_dim, "recurrent")
            self.linear(f"{p}.in_proj_b", hidden, v_heads, "recurrent")
            self.linear(f"{p}.in_proj_a", hidden, v_heads, "recurrent")
        else:
            self.linear(f"{p}.in_proj_qkvz", hidden, 2 * key_dim + 2 * value_dim, "recurrent")
            self.linear(f"{p}.in_proj_ba", hidden, 2 * v_heads, "recurrent")
        self.add(f"{p}.conv1d.weight", (conv_dim, 1, kernel), "other")
        self.add(f"{p}.dt_bias", (v_heads,), "norm")
        self.add(f"{p}.A_log", (v_heads,), "norm")
        self.norm(f"{p}.norm", v_dim)
        self.linear(f"{p}.out_proj", value_dim, hidden, "recurrent")
        # recurrent state per sequence: v_heads x k_dim x v_dim
        return conv_dim, v_heads * k_dim * v_dim


def vision_tower(t: Tensors, vc: dict, text_hidden: int, *, origin: str = "config.json") -> str | None:
    """ViT-style vision tower (SigLIP, Qwen-VL) from `vision_config`, plus a projector.

    Counted as resident weights (DESIGN: multimodal towers stay loaded). Shapes follow
    SigLIP: patch conv, position table, per block LN1/qkv/o/LN2/fc1/fc2 with biases.
    Returns a note, since projector details vary by family (approximated as one linear).

    Raises:
        ConfigError: a size is implausible (the block loop runs `depth` times: it must be bounded).
    """
    def get(*keys: str, default: int = 0, bound: int = MAX_HIDDEN) -> int:
        for k in keys:
            v = vc.get(k)
            if isinstance(v, list) and v and isinstance(v[0], int):
                v = v[0]
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                if v > bound:
                    raise ConfigError(f"Cannot size the vision tower from '{origin}': key 'vision_config.{k}' "
                                      f"must be between 1 and {bound} (got {v!r:.40}).", origin,
                                      key=f"vision_config.{k}")
                return v
        return default

    h = get("hidden_size", "embed_dim", default=768)
    inter = get("intermediate_size", default=4 * h, bound=MAX_HIDDEN * 8)
    depth = get("num_hidden_layers", "depth", default=12, bound=MAX_LAYERS)
    patch = get("patch_size", default=16)
    chans = get("num_channels", "in_channels", default=3)
    temporal = get("temporal_patch_size", default=1)
    positions = get("num_position_embeddings", default=0) or (get("image_size", default=224) // patch) ** 2
    out = get("out_hidden_size", default=text_hidden)
    p = "vision_tower"
    t.add(f"{p}.patch_embed.weight", (h, chans, temporal, patch, patch), "vision")
    t.add(f"{p}.patch_embed.bias", (h,), "vision")
    t.add(f"{p}.pos_embed.weight", (positions, h), "vision")
    for i in range(depth):
        b = f"{p}.blocks.{i}"
        for name, shape in ((f"{b}.norm1", (h,)), (f"{b}.norm2", (h,))):
            t.add(f"{name}.weight", shape, "vision")
            t.add(f"{name}.bias", shape, "vision")
        t.add(f"{b}.attn.qkv.weight", (3 * h, h), "vision")
        t.add(f"{b}.attn.qkv.bias", (3 * h,), "vision")
        t.add(f"{b}.attn.proj.weight", (h, h), "vision")
        t.add(f"{b}.attn.proj.bias", (h,), "vision")
        t.add(f"{b}.mlp.fc1.weight", (inter, h), "vision")
        t.add(f"{b}.mlp.fc1.bias", (inter,), "vision")
        t.add(f"{b}.mlp.fc2.weight", (h, inter), "vision")
        t.add(f"{b}.mlp.fc2.bias", (h,), "vision")
    t.add(f"{p}.post_norm.weight", (h,), "vision")
    t.add("multi_modal_projector.weight", (out, h), "vision")
    return "vision tower sized from vision_config as a SigLIP-style ViT (projector approximated)"
