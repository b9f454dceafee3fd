"""Hugging Face cache and Hub access, header-only, offline-first, bounded.

Why separate: this is the only module that talks to huggingface_hub. The cache is read
without network (hub_cache.py, bounded); the Hub is used only when online
(HF_HUB_OFFLINE/SPEC_PLANNER_OFFLINE unset): small JSON files HEAD-checked against their size
cap, then fetched by our own bounded GET (hub_http.py: a cap on the bytes received and decoded,
gzip decoded by us, one total deadline) and stored by hub_cache.py under names we choose (never
the server's ETag or X-Repo-Commit as a path); safetensors headers through our own HTTP range
reads fed to `safetensors.parse_header` (the same checks as a local file: length prefix against
the cap and the file size, at most 8 + N bytes read even if a server ignores the Range header).
Weights, pickles and remote code are never fetched. huggingface_hub's `try_to_load_from_cache`
is not used: it reads a `refs/` file whole (a sparse 3 GB ref cost 9 GB RSS).

Network failures (connection refused or reset, DNS, TLS, timeouts, HTTP 408/429/5xx) are
retried HUB_RETRIES times, then reported as `OfflineError`; `resolve.locate` then falls back
to the HF cache or the bundled catalog with a warning. HF_ENDPOINT and HF_TOKEN are honoured
by the client.
"""

from __future__ import annotations

import contextlib
import re
import sys
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
    hub_deadline_s,
    is_offline,
)
from ..core.errors import HeaderError, ModelNotFound, OfflineError, SourceError
from . import hub_cache
from .hub_http import Deadline, parallel_map, read_body, run_within
from .safetensors import RawTensor, header_length, parse_header, read_index

SIDE_FILES = ("generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
              "chat_template.jinja", "chat_template.json")
_SIZE_CAPS = {"tokenizer.json": TOKENIZER_JSON_MAX_BYTES}
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]{0,95}/[\w.\-]{1,96}$|^[A-Za-z0-9][\w.\-]{0,95}$")
_SHARD_WORKERS = 8  # parallel header reads of a sharded repo (huggingface_hub maps them over threads too)


def looks_like_repo_id(ref: str) -> bool:
    return bool(_REPO_ID.match(ref)) and ".." not in ref and not ref.endswith((".gguf", ".json"))


def cached_snapshot(repo_id: str, revision: str | None = None) -> Path | None:
    """Snapshot directory of `repo_id` in the local HF cache if its config.json is there (bounded reads)."""
    if not looks_like_repo_id(repo_id):
        return None
    hit = hub_cache.cached_file(repo_id, "config.json", revision)
    return hit.parent if hit is not None else None


def any_cached_snapshot(repo_id: str) -> Path | None:
    """The most recently written cached snapshot of `repo_id` holding a config.json, at any revision.

    Used when the requested revision cannot be fetched: an older answer with a warning beats none.
    """
    if not looks_like_repo_id(repo_id):
        return None
    try:
        snaps = hub_cache.repo_dir(repo_id) / "snapshots"
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
    deadline = Deadline(hub_deadline_s())
    last: _Unreachable | None = None
    for _ in range(attempts):
        try:
            with _quiet_client():
                return run_within(lambda: _fetch(repo_id, revision, deadline), deadline, repo_id)
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


def _fetch(repo_id: str, revision: str | None, deadline: Deadline) -> tuple[Path, list[RawTensor] | None, str]:
    """One attempt; Hub errors mapped to planner errors, network failures to `_Unreachable`."""
    token = hf_token()
    try:
        meta = _head(repo_id, "config.json", revision, token)  # first contact: no internal retries
        if meta is None:
            raise ModelNotFound(f"Cannot use '{repo_id}': the repo has no config.json.", repo_id)
        config_path = _download(repo_id, "config.json", revision, token, meta, deadline)
        for name in SIDE_FILES:
            side = _head(repo_id, name, revision, token)
            if side is not None:
                _download(repo_id, name, revision, token, side, deadline)
        tensors = _remote_tensors(repo_id, revision, token, deadline)
    except (SourceError, _Unreachable):
        raise
    except Exception as e:
        if _is_unreachable(e):
            raise _Unreachable(_reason(e)) from e
        raise _mapped(e, repo_id, revision) from e
    return config_path.parent, tensors, revision or getattr(meta, "commit_hash", None) or "main"


def _download(repo_id: str, filename: str, revision: str | None, token: str | None, meta: Any,
              deadline: Deadline) -> Path:
    """One small file: size cap checked on HEAD, then a bounded GET of the commit HEAD named, stored by hub_cache.

    The GET asks for the commit the HEAD answered (not the branch), so the bytes stored are the
    bytes of that commit even if the branch moves in between; the cap holds on the body received.
    """
    from huggingface_hub import hf_hub_url

    _check_size(repo_id, filename, meta)
    commit = hub_cache.require_commit(getattr(meta, "commit_hash", None), f"{repo_id}/{filename}")
    url = hf_hub_url(repo_id, filename, revision=commit)
    data, _ = _get(url, token, _SIZE_CAPS.get(filename, JSON_MAX_BYTES), f"{repo_id}/{filename}", deadline)
    return hub_cache.store(repo_id, filename, commit, revision, data)


def _get(url: str, token: str | None, cap: int, origin: str, deadline: Deadline,
         extra: dict[str, str] | None = None, *, truncate: bool = False) -> tuple[bytes, Any]:
    """A bounded GET (redirects followed, at most httpx's 20): the body, and the response headers."""
    from huggingface_hub.utils import build_hf_headers, get_session

    headers = {**build_hf_headers(token=token), "Accept-Encoding": "identity", **(extra or {})}
    session = get_session()
    timeout = min(HUB_TIMEOUT_S, max(0.5, deadline.left()))
    if hasattr(session, "stream"):  # httpx (huggingface_hub >= 1.0)
        with session.stream("GET", url, headers=headers, timeout=timeout, follow_redirects=True) as r:
            _raise_for_get(r, origin)
            return read_body(r, cap=cap, deadline=deadline, origin=origin, truncate=truncate), r.headers
    # requests (older hub): huggingface_hub's annotation names only its current httpx Client
    with session.get(url, headers=headers, timeout=timeout, stream=True) as r:  # type: ignore[call-arg, attr-defined]
        _raise_for_get(r, origin)
        return read_body(r, cap=cap, deadline=deadline, origin=origin, truncate=truncate), r.headers


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


def _mapped(e: BaseException, repo_id: str, revision: str | None) -> BaseException:
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
    if _is_http_error(e):  # too many redirects, an undecodable body, an invalid URL or header
        return SourceError(f"Cannot read '{repo_id}' from the Hub: {_reason(e)}. Check HF_ENDPOINT.", repo_id)
    return e  # a bug: let it show


def _is_http_error(e: BaseException) -> bool:
    """An exception of the HTTP stack itself (httpx2/httpx HTTPError, InvalidURL, requests RequestException)."""
    for mod, names in (("httpx2", ("HTTPError", "InvalidURL", "StreamError")),
                       ("httpx", ("HTTPError", "InvalidURL", "StreamError")), ("requests", ("RequestException",))):
        m = sys.modules.get(mod)
        if m is not None and isinstance(e, tuple(getattr(m, n) for n in names if hasattr(m, n))):
            return True
    return False


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


def _remote_tensors(repo_id: str, revision: str | None, token: str | None, deadline: Deadline
                    ) -> list[RawTensor] | None:
    """Header tensors of model.safetensors, or of every shard the (validated) index names; None if neither."""
    single = _head(repo_id, "model.safetensors", revision, token)
    if single is not None:
        return _remote_header(repo_id, "model.safetensors", revision, token, single, deadline)
    index = _head(repo_id, "model.safetensors.index.json", revision, token)
    if index is None:
        return None
    wmap = read_index(_download(repo_id, "model.safetensors.index.json", revision, token, index, deadline))
    # read_index: bounded, shard names checked, MAX_SHARDS

    def shard(name: str) -> list[RawTensor]:
        meta = _head(repo_id, name, revision, token)
        if meta is None:
            raise HeaderError(f"Cannot read checkpoint '{repo_id}' from the Hub: the index names shard '{name}', "
                              f"which is missing.", f"{repo_id}/{name}")
        found = _remote_header(repo_id, name, revision, token, meta, deadline)
        names = {t[0] for t in found}
        missing = [t for t, s in wmap.items() if s == name and t not in names]
        if missing:
            raise HeaderError(f"Cannot read '{repo_id}/{name}' from the Hub: the index says it holds '{missing[0]}' "
                              f"({len(missing)} tensor(s) missing).", f"{repo_id}/{name}")
        return found

    shards = sorted(set(wmap.values()))
    return [t for part in parallel_map(shard, shards, _SHARD_WORKERS, deadline, repo_id) for t in part]


def _remote_header(repo_id: str, filename: str, revision: str | None, token: str | None, meta: Any,
                   deadline: Deadline) -> list[RawTensor]:
    """One remote safetensors header: a first ranged read, a second only for a header longer than it."""
    from huggingface_hub import hf_hub_url

    origin = f"{repo_id}/{filename}" + (f"@{revision}" if revision else "")
    url = hf_hub_url(repo_id, filename, revision=revision)
    size = meta.size if isinstance(getattr(meta, "size", None), int) else None
    first, total = _get_range(url, 0, HUB_FIRST_READ_BYTES - 1, token, origin, deadline)
    size = size if size is not None else total
    n = header_length(first, size, origin)
    if 8 + n <= len(first):
        data = first[8:8 + n]
    else:
        data, _ = _get_range(url, 8, 8 + n - 1, token, origin, deadline)
        if len(data) < n:
            raise HeaderError(f"Cannot read '{origin}': the Hub sent {len(data)} of the {n} header bytes "
                              f"(truncated).", origin)
    return parse_header(data, origin, data_size=size - 8 - n if size is not None else None)


def _get_range(url: str, start: int, end: int, token: str | None, origin: str, deadline: Deadline
               ) -> tuple[bytes, int | None]:
    """Bytes start..end (inclusive) of url, never more even if the server ignores Range; and the total size."""
    data, headers = _get(url, token, end - start + 1, origin, deadline, {"Range": f"bytes={start}-{end}"},
                         truncate=True)
    return data, _total(headers)


def _raise_for_get(r: Any, origin: str) -> None:
    status = r.status_code
    if status in (200, 206):
        return
    if status in (408, 429) or status >= 500:
        raise _Unreachable(f"HTTP {status}")
    raise SourceError(f"Cannot read '{origin}' from the Hub: HTTP {status} on GET (expected 200 or 206). "
                      f"Check the repo id, revision and HF_TOKEN.", origin)


def _total(headers: Any) -> int | None:
    m = re.match(r"bytes \d+-\d+/(\d+)$", headers.get("Content-Range", "") or "")
    return int(m.group(1)) if m else None
