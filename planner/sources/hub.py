"""Hugging Face cache and Hub access, header-only, offline-first, bounded.

Why separate: this is the only module that talks to huggingface_hub. The cache is read
without network (`try_to_load_from_cache`); the Hub is used only when online
(HF_HUB_OFFLINE/SPEC_PLANNER_OFFLINE unset): small JSON files through `hf_hub_download`
(each HEAD-checked against its size cap first), safetensors headers through our own HTTP
range reads fed to `safetensors.parse_header` (the same checks as a local file: length
prefix against the cap and the file size, at most 8 + N bytes read even if a server ignores
the Range header). Weights, pickles and remote code are never fetched.

Network failures (connection refused or reset, DNS, TLS, timeouts, HTTP 408/429/5xx) are
retried HUB_RETRIES times, then reported as `OfflineError`; `resolve.locate` then falls back
to the HF cache or the bundled catalog with a warning. HF_ENDPOINT and HF_TOKEN are honoured
by the client.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.constants import (
    HUB_FIRST_READ_BYTES,
    HUB_RETRIES,
    HUB_TIMEOUT_S,
    JSON_MAX_BYTES,
    TOKENIZER_JSON_MAX_BYTES,
    hf_token,
    is_offline,
)
from ..core.errors import HeaderError, ModelNotFound, OfflineError, SourceError
from .safetensors import RawTensor, header_length, parse_header, read_index

SIDE_FILES = ("generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
              "chat_template.jinja", "chat_template.json")
_SIZE_CAPS = {"tokenizer.json": TOKENIZER_JSON_MAX_BYTES}
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]{0,95}/[\w.\-]{1,96}$|^[A-Za-z0-9][\w.\-]{0,95}$")
_SHARD_WORKERS = 8  # parallel header reads of a sharded repo (huggingface_hub maps them over threads too)


def looks_like_repo_id(ref: str) -> bool:
    return bool(_REPO_ID.match(ref)) and ".." not in ref and not ref.endswith((".gguf", ".json"))


def cached_snapshot(repo_id: str, revision: str | None = None) -> Path | None:
    """Snapshot directory of `repo_id` in the local HF cache if its config.json is there."""
    from huggingface_hub import try_to_load_from_cache

    try:
        hit = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except (ValueError, OSError):  # invalid repo id for the cache layout (HFValidationError), unreadable cache
        return None
    return Path(hit).parent if isinstance(hit, str) else None


def any_cached_snapshot(repo_id: str) -> Path | None:
    """The most recently written cached snapshot of `repo_id` holding a config.json, at any revision.

    Used when the requested revision cannot be fetched: an older answer with a warning beats none.
    """
    try:
        from huggingface_hub import constants as hf_constants
        from huggingface_hub.file_download import repo_folder_name

        snaps = Path(hf_constants.HF_HUB_CACHE) / repo_folder_name(repo_id=repo_id, repo_type="model") / "snapshots"
        found = [d for d in snaps.iterdir() if (d / "config.json").is_file()] if snaps.is_dir() else []
        return max(found, key=lambda d: (d / "config.json").stat().st_mtime) if found else None
    except (OSError, ValueError, ImportError):
        return None


class _Unreachable(Exception):  # internal marker, never escapes this module
    """The Hub did not answer (connection, timeout, 408/429/5xx); `reason` says how."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def fetch_from_hub(repo_id: str, revision: str | None = None) -> tuple[Path, list[RawTensor] | None, str]:
    """Download config.json and small side files, read safetensors headers by range requests.

    Tries 1 + HUB_RETRIES times when the Hub does not answer, each request with HUB_TIMEOUT_S.

    Returns (snapshot dir holding the JSON files, header tensors or None, commit/revision label).

    Raises:
        OfflineError: offline mode, or the Hub cannot be reached (after the retry).
        ModelNotFound: no such repo, revision or config.json.
        SourceError / HeaderError: gated/private repo without a token, oversized files, invalid headers.
    """
    if is_offline():
        raise OfflineError(f"Cannot find model '{repo_id}' offline: it is not a local path, not in the bundled "
                           f"catalog and not in the Hugging Face cache. Unset HF_HUB_OFFLINE to read it from the "
                           f"Hub, or download it with 'hf download {repo_id} config.json'.")
    attempts = 1 + HUB_RETRIES
    last: _Unreachable | None = None
    for _ in range(attempts):
        try:
            with _quiet_client():
                return _fetch(repo_id, revision)
        except _Unreachable as e:
            last = e
    assert last is not None
    raise OfflineError(f"Cannot reach the Hugging Face Hub for '{repo_id}' ({last.reason}; {attempts} attempts, "
                       f"{HUB_TIMEOUT_S:g} s timeout each): it is not cached or catalogued. Check the connection "
                       f"or HF_ENDPOINT, or set HF_HUB_OFFLINE=1 to use local files only.") from last.__cause__


@contextlib.contextmanager
def _quiet_client() -> Iterator[None]:
    """huggingface_hub logs retries and warnings on stderr: the CLI's stderr is one line per message."""
    import logging  # here: only Hub reads need it, and a local run starts faster without it

    log = logging.getLogger("huggingface_hub")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _fetch(repo_id: str, revision: str | None) -> tuple[Path, list[RawTensor] | None, str]:
    """One attempt; Hub errors mapped to planner errors, network failures to `_Unreachable`."""
    from huggingface_hub import hf_hub_download

    token = hf_token()
    try:
        meta = _head(repo_id, "config.json", revision, token)  # first contact: no internal retries
        if meta is None:
            raise ModelNotFound(f"Cannot use '{repo_id}': the repo has no config.json.", repo_id)
        _check_size(repo_id, "config.json", meta)
        config_path = Path(hf_hub_download(repo_id, "config.json", revision=revision, token=token,
                                           etag_timeout=HUB_TIMEOUT_S))
        for name in SIDE_FILES:
            side = _head(repo_id, name, revision, token)
            if side is not None:
                _check_size(repo_id, name, side)
                hf_hub_download(repo_id, name, revision=revision, token=token, etag_timeout=HUB_TIMEOUT_S)
        tensors = _remote_tensors(repo_id, revision, token)
    except (SourceError, _Unreachable):
        raise
    except Exception as e:
        if _is_unreachable(e):
            raise _Unreachable(_reason(e)) from e
        raise _mapped(e, repo_id, revision) from e
    return config_path.parent, tensors, revision or getattr(meta, "commit_hash", None) or "main"


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Connection/timeout exception classes of whichever HTTP stack huggingface_hub runs on."""
    out: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for mod, names in (("httpx2", ("TransportError",)), ("httpx", ("TransportError",)),
                       ("requests", ("ConnectionError", "Timeout"))):
        with contextlib.suppress(ImportError):
            m = __import__(mod)
            out += [getattr(m, n) for n in names if hasattr(m, n)]
    return tuple(out)


def _status(e: BaseException) -> int | None:
    response = getattr(e, "response", None)
    return getattr(response, "status_code", None)


def _is_unreachable(e: BaseException) -> bool:
    from huggingface_hub import errors as hf_errors

    if isinstance(e, (hf_errors.OfflineModeIsEnabled, hf_errors.LocalEntryNotFoundError)):
        return True  # hf_hub_download: "cannot reach the Hub and the file is not cached"
    status = _status(e)
    if isinstance(e, hf_errors.HfHubHTTPError) and status is not None:
        return status in (408, 429) or status >= 500
    return isinstance(e, _transport_errors())


def _reason(e: BaseException) -> str:
    status = _status(e)
    if status is not None:
        return f"HTTP {status}"
    inner = e.__cause__ or e.__context__
    shown = inner if isinstance(inner, _transport_errors()) else e
    text = str(shown).split("\n", 1)[0][:120]
    return f"{type(shown).__name__}: {text}" if text else type(shown).__name__


def _mapped(e: BaseException, repo_id: str, revision: str | None) -> Exception:
    """A huggingface_hub error as the planner error that says what to do (unknown errors pass through)."""
    from huggingface_hub import errors as hf_errors

    if isinstance(e, hf_errors.GatedRepoError):
        return SourceError(f"Cannot read '{repo_id}' from the Hub: the repo is gated. Accept its licence on the "
                           f"Hub and set HF_TOKEN.", repo_id)
    if isinstance(e, hf_errors.RepositoryNotFoundError):
        return ModelNotFound(f"Cannot find model '{repo_id}': no such repo on the Hub (or it is private: set "
                             f"HF_TOKEN).", repo_id)
    if isinstance(e, hf_errors.RevisionNotFoundError):
        return ModelNotFound(f"Cannot find revision '{revision}' of '{repo_id}' on the Hub.", repo_id)
    if isinstance(e, hf_errors.HFValidationError):
        return ModelNotFound(f"Cannot use '{repo_id}': not a valid Hugging Face repo id ({str(e)[:80]}).", repo_id)
    if isinstance(e, hf_errors.HfHubHTTPError):
        return SourceError(f"Cannot read '{repo_id}' from the Hub: HTTP {_status(e)} (expected 200). Check the repo "
                           f"id, revision and HF_TOKEN.", repo_id)
    if isinstance(e, OSError):  # the HF cache directory is not writable, the disk is full
        return SourceError(f"Cannot store '{repo_id}' in the Hugging Face cache: {e.strerror or e}. Check "
                           f"HF_HUB_CACHE.", repo_id)
    return e  # a bug: let it show


def _head(repo_id: str, filename: str, revision: str | None, token: str | None) -> Any | None:
    """HEAD one file (no retries inside huggingface_hub): its metadata, or None when the repo has no such file."""
    from huggingface_hub import errors as hf_errors
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    url = hf_hub_url(repo_id, filename, revision=revision)
    try:
        return get_hf_file_metadata(url, token=token, timeout=HUB_TIMEOUT_S)
    except (hf_errors.EntryNotFoundError, hf_errors.RemoteEntryNotFoundError) as e:
        if isinstance(e, hf_errors.LocalEntryNotFoundError):
            raise
        return None


def _check_size(repo_id: str, name: str, meta: Any) -> None:
    cap = _SIZE_CAPS.get(name, JSON_MAX_BYTES)
    size = getattr(meta, "size", None)
    if isinstance(size, int) and size > cap:
        raise SourceError(f"Cannot read '{repo_id}/{name}' from the Hub: {size} bytes is larger than the "
                          f"{cap}-byte limit for this kind of file (not downloaded).", repo_id)


def _remote_tensors(repo_id: str, revision: str | None, token: str | None) -> list[RawTensor] | None:
    """Header tensors of model.safetensors, or of every shard the (validated) index names; None if neither."""
    from huggingface_hub import hf_hub_download

    single = _head(repo_id, "model.safetensors", revision, token)
    if single is not None:
        return _remote_header(repo_id, "model.safetensors", revision, token, single)
    index = _head(repo_id, "model.safetensors.index.json", revision, token)
    if index is None:
        return None
    _check_size(repo_id, "model.safetensors.index.json", index)
    wmap = read_index(hf_hub_download(repo_id, "model.safetensors.index.json", revision=revision, token=token,
                                      etag_timeout=HUB_TIMEOUT_S))  # bounded, shard names checked, MAX_SHARDS

    def shard(name: str) -> list[RawTensor]:
        meta = _head(repo_id, name, revision, token)
        if meta is None:
            raise HeaderError(f"Cannot read checkpoint '{repo_id}' from the Hub: the index names shard '{name}', "
                              f"which is missing.", f"{repo_id}/{name}")
        found = _remote_header(repo_id, name, revision, token, meta)
        names = {t[0] for t in found}
        missing = [t for t, s in wmap.items() if s == name and t not in names]
        if missing:
            raise HeaderError(f"Cannot read '{repo_id}/{name}' from the Hub: the index says it holds '{missing[0]}' "
                              f"({len(missing)} tensor(s) missing).", f"{repo_id}/{name}")
        return found

    from concurrent.futures import ThreadPoolExecutor  # here: only a sharded Hub checkpoint needs threads

    shards = sorted(set(wmap.values()))
    with ThreadPoolExecutor(max_workers=min(_SHARD_WORKERS, len(shards))) as pool:
        return [t for part in pool.map(shard, shards) for t in part]


def _remote_header(repo_id: str, filename: str, revision: str | None, token: str | None, meta: Any
                   ) -> list[RawTensor]:
    """One remote safetensors header: a first ranged read, a second only for a header longer than it."""
    from huggingface_hub import hf_hub_url

    origin = f"{repo_id}/{filename}" + (f"@{revision}" if revision else "")
    url = hf_hub_url(repo_id, filename, revision=revision)
    size = meta.size if isinstance(getattr(meta, "size", None), int) else None
    first, total = _get_range(url, 0, HUB_FIRST_READ_BYTES - 1, token, origin)
    size = size if size is not None else total
    n = header_length(first, size, origin)
    if 8 + n <= len(first):
        data = first[8:8 + n]
    else:
        data, _ = _get_range(url, 8, 8 + n - 1, token, origin)
        if len(data) < n:
            raise HeaderError(f"Cannot read '{origin}': the Hub sent {len(data)} of the {n} header bytes "
                              f"(truncated).", origin)
    return parse_header(data, origin, data_size=size - 8 - n if size is not None else None)


def _get_range(url: str, start: int, end: int, token: str | None, origin: str) -> tuple[bytes, int | None]:
    """Bytes start..end (inclusive) of url, never more even if the server ignores Range; and the total size."""
    from huggingface_hub.utils import build_hf_headers, get_session

    want = end - start + 1
    headers = {**build_hf_headers(token=token), "Range": f"bytes={start}-{end}"}
    session = get_session()
    if hasattr(session, "stream"):  # httpx (huggingface_hub >= 1.0)
        with session.stream("GET", url, headers=headers, timeout=HUB_TIMEOUT_S) as r:
            _raise_for_range(r, origin)
            return _take(r.iter_bytes(), want), _total(r.headers)
    with session.get(url, headers=headers, timeout=HUB_TIMEOUT_S, stream=True) as r:  # requests (older hub)
        _raise_for_range(r, origin)
        return _take(r.iter_content(65536), want), _total(r.headers)


def _raise_for_range(r: Any, origin: str) -> None:
    status = r.status_code
    if status in (200, 206):
        return
    if status in (408, 429) or status >= 500:
        raise _Unreachable(f"HTTP {status}")
    raise SourceError(f"Cannot read '{origin}' from the Hub: HTTP {status} on a ranged read (expected 206). "
                      f"Check the repo id, revision and HF_TOKEN.", origin)


def _take(chunks: Any, want: int) -> bytes:
    buf = bytearray()
    for chunk in chunks:
        buf += chunk
        if len(buf) >= want:
            break
    return bytes(buf[:want])


def _total(headers: Any) -> int | None:
    m = re.match(r"bytes \d+-\d+/(\d+)$", headers.get("Content-Range", "") or "")
    return int(m.group(1)) if m else None
