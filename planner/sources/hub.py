"""Hugging Face cache and Hub access, header-only, offline-first.

Why separate: this is the only module that talks to huggingface_hub. The cache
is read without network (`try_to_load_from_cache`); the Hub is used only when
online (HF_HUB_OFFLINE/SPEC_PLANNER_OFFLINE unset): small JSON files through
`hf_hub_download`, safetensors headers through `get_safetensors_metadata` (HTTP
range reads, no weights). HF_ENDPOINT and HF_TOKEN are honoured by the client.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..constants import HUB_TIMEOUT_S, hf_token, is_offline
from ..errors import ModelNotFound, OfflineError, SourceError
from .safetensors import RawTensor, validate_entries

SIDE_FILES = ("generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
              "chat_template.jinja", "chat_template.json")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]{0,95}/[\w.\-]{1,96}$|^[A-Za-z0-9][\w.\-]{0,95}$")


def looks_like_repo_id(ref: str) -> bool:
    return bool(_REPO_ID.match(ref)) and ".." not in ref and not ref.endswith((".gguf", ".json"))


def cached_snapshot(repo_id: str, revision: str | None = None) -> Path | None:
    """Snapshot directory of `repo_id` in the local HF cache if its config.json is there."""
    from huggingface_hub import try_to_load_from_cache

    try:
        hit = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except Exception:  # invalid repo id for the cache layout, unreadable cache: not cached
        return None
    return Path(hit).parent if isinstance(hit, str) else None


def fetch_from_hub(repo_id: str, revision: str | None = None) -> tuple[Path, list[RawTensor] | None, str]:
    """Download config.json and small side files, read safetensors headers by range requests.

    Returns (snapshot dir holding the JSON files, header tensors or None, commit/revision label).

    Raises:
        OfflineError: offline mode, or the Hub cannot be reached.
        ModelNotFound: no such repo, revision or config.json.
        SourceError: gated/private repo without a token.
    """
    if is_offline():
        raise OfflineError(f"Cannot find model '{repo_id}' offline: it is not a local path, not in the bundled "
                           f"catalog and not in the Hugging Face cache. Unset HF_HUB_OFFLINE to read it from the "
                           f"Hub, or download it with 'hf download {repo_id} config.json'.")
    from huggingface_hub import errors as hf_errors
    from huggingface_hub import get_safetensors_metadata, hf_hub_download

    token = hf_token()
    try:
        config_path = Path(hf_hub_download(repo_id, "config.json", revision=revision, token=token,
                                           etag_timeout=HUB_TIMEOUT_S))
        for name in SIDE_FILES:
            try:
                hf_hub_download(repo_id, name, revision=revision, token=token, etag_timeout=HUB_TIMEOUT_S)
            except (hf_errors.EntryNotFoundError, hf_errors.RemoteEntryNotFoundError):
                continue
        try:
            meta = get_safetensors_metadata(repo_id, revision=revision, token=token, timeout=HUB_TIMEOUT_S)
            tensors = []
            for fname, fmeta in meta.files_metadata.items():
                entries = {n: {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": list(t.data_offsets)}
                           for n, t in fmeta.tensors.items()}
                tensors.extend(validate_entries(entries, f"{repo_id}/{fname}"))
        except hf_errors.NotASafetensorsRepoError:
            tensors = None
    except hf_errors.GatedRepoError as e:
        raise SourceError(f"Cannot read '{repo_id}' from the Hub: the repo is gated. Accept its licence on the "
                          f"Hub and set HF_TOKEN.", repo_id) from e
    except hf_errors.RepositoryNotFoundError as e:
        raise ModelNotFound(f"Cannot find model '{repo_id}': no such repo on the Hub (or it is private: set "
                            f"HF_TOKEN).", repo_id) from e
    except hf_errors.RevisionNotFoundError as e:
        raise ModelNotFound(f"Cannot find revision '{revision}' of '{repo_id}' on the Hub.", repo_id) from e
    except (hf_errors.EntryNotFoundError, hf_errors.RemoteEntryNotFoundError) as e:
        raise ModelNotFound(f"Cannot use '{repo_id}': the repo has no config.json.", repo_id) from e
    except hf_errors.SafetensorsParsingError as e:
        raise SourceError(f"Cannot read the safetensors headers of '{repo_id}' from the Hub: {e}", repo_id) from e
    except (hf_errors.OfflineModeIsEnabled, ConnectionError, TimeoutError, OSError) as e:
        raise OfflineError(f"Cannot reach the Hugging Face Hub for '{repo_id}' ({type(e).__name__}): it is not "
                           f"cached or catalogued. Check the connection or HF_ENDPOINT.") from e
    return config_path.parent, tensors, revision or "main"

