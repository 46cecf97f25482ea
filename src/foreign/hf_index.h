// Sharded Hugging Face checkpoints: model.safetensors.index.json or
// pytorch_model.bin.index.json beside its shards. The index is
// {"metadata": {...}, "weight_map": {tensor: shard file}}; the model is the
// tensors of every shard, read once each with the reader of its kind
// (safetensors or PyTorch).
//
// Checked before anything is handed out: every shard name is a plain file
// name beside the index (no '/', not "." or "..", not hidden), every tensor
// of the map lies in the shard the map names, every tensor of a shard is in
// the map, and no name appears twice. Objects come shard by shard (shards by
// name, so model-00001-of-00004 first), in each shard's own order. The
// shards' own metadata (safetensors' {"format": "pt"}) become the file
// attributes where the shards agree (a key they disagree on is refused),
// and the index's "metadata" object is kept whole as the attribute
// "hf.index.metadata" (its total_size among them), and the index's text as
// "hf.index" (kHfIndexAttribute), so that the checkpoint can be written back
// shard by shard.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "foreign/foreign.h"

namespace zt::foreign {

constexpr std::string_view kHfIndexAttribute = "hf.index";

bool is_hf_index(std::string_view path);
// One file name beside the index: no separator of any system ('/' or
// '\\'), no NUL, not hidden or a dot entry ("..").
bool plain_file_name(std::string_view s);
// A kept index's weight map (tensor -> shard) for writing the checkpoint
// back: parsed as an index is read, every shard a plain .safetensors file
// name (what the text names is never trusted to be beside the model).
Result<std::unordered_map<std::string, std::string>> safetensors_shards_of_index(
    const char* where, std::string_view text);
// The same of the index file at `path` (read as any index is: its size
// checked first).
Result<std::unordered_map<std::string, std::string>> safetensors_shards_of_index_file(
    const std::string& path);
Result<ForeignFile> read_hf_index(const std::string& path, const ReadOptions& options = {});
// The same over HTTP: `index_bytes` is the whole index as fetched from
// `index_source`; shards (safetensors only) are opened beside it through
// RangeSource::sibling and read as read_safetensors_remote does.
Result<ForeignFile> read_hf_index_remote(const RangeSource& index_source,
                                         std::span<const uint8_t> index_bytes,
                                         uint64_t cache_bytes);

}  // namespace zt::foreign
