"""The valid tokenizer files the fuzz tests mutate, written by the `tokenizers` library itself.

Tokenizer.to_str gives the exact layout real repositories hold (BPE, Unigram, WordPiece); the side file
follows transformers' save_pretrained. Used by tests/test_fuzz_tokenizer.py, test_fuzz_corpus.py and
test_fuzz_safety.py.
"""

from __future__ import annotations

import json

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors


def _bpe() -> dict:
    vocab = {"<s>": 0, "</s>": 1, "<unk>": 2}
    for c in "abcdefghij ":
        vocab[c] = len(vocab)
    merges = [("a", "b"), ("c", "d"), ("ab", "cd")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<s>", "</s>", "<|im_start|>"])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", 0), ("</s>", 1)])
    return json.loads(tok.to_str())


def _unigram() -> dict:
    tok = Tokenizer(models.Unigram([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -1.5)], unk_id=0))
    return json.loads(tok.to_str())


def _wordpiece() -> dict:
    tok = Tokenizer(models.WordPiece({"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "a": 3, "##b": 4}, unk_token="[UNK]"))
    tok.post_processor = processors.BertProcessing(("[SEP]", 2), ("[CLS]", 1))
    return json.loads(tok.to_str())


TOKENIZERS = {"bpe": _bpe(), "unigram": _unigram(), "wordpiece": _wordpiece()}
TOKENIZER_CONFIG = {
    "add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": {"content": "</s>"},
    "unk_token": "<unk>", "pad_token": None, "tokenizer_class": "LlamaTokenizer", "model_max_length": 4096,
    "added_tokens_decoder": {"0": {"content": "<s>", "special": True}, "1": {"content": "</s>", "special": True}},
    "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}",
}
# The model these tokenizers belong to (vocab_size: the BPE vocabulary's 18 entries).
TOKENIZER_MODEL_CONFIG = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
                          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                          "vocab_size": 18, "bos_token_id": 0, "eos_token_id": 1}
