// Models named by their Hugging Face Hub id (issue 49): `ORG/NAME[@REVISION]` read from the config.json the Hugging
// Face tools keep in their local cache, else that one file downloaded (hub_config; never weights): $HF_HUB_CACHE, else
// $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub; in each,
// models--ORG--NAME/refs/REVISION (default main) names the snapshot whose config.json is read, or REVISION is a
// snapshot's commit itself.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dnncast::import {

// ORG/NAME or ORG/NAME@REVISION, each part letters, digits, '.', '_' or '-' (not starting with '.'), no file suffix
// .json or .onnx: what names a Hub model rather than a path.
bool looks_like_hub_id(const std::string& source);

// The cache folders searched, in order (those that exist or not).
std::vector<std::string> hub_cache_dirs();

// The cached config.json of the id, or none.
std::optional<std::string> hub_cached_config(const std::string& id);

// InputError text for an id found in no cache: what was searched and how to fetch only the config.
std::string hub_not_cached_message(const std::string& id);

// The id's config.json from the cache, else downloaded from the Hub and cached where the Hugging Face tools would put
// it (the first cache folder: models--ORG--NAME/blobs/ETAG, snapshots/COMMIT/config.json linking to it,
// refs/REVISION naming COMMIT); never any other file. GET $HF_ENDPOINT (default https://huggingface.co)
// /ORG/NAME/resolve/REVISION/config.json with `Authorization: Bearer $HF_TOKEN` when set, redirects followed,
// 10 s to connect and to read (DNNCAST_HUB_TIMEOUT seconds), at most 1 MiB. InputError, one line naming the id and
// what to do: offline (HF_HUB_OFFLINE=1) and not cached, unreachable, 401/403 (gated or private: a token), 404, any
// other status, a body that is not a JSON object (nothing is cached then).
std::string hub_config(const std::string& id);

}  // namespace dnncast::import
