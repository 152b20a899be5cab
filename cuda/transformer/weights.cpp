#include "transformer/weights.h"

#include <cstring>

#include "common/common.h"
#include "io/npy.h"
#include "io/sha256.h"
#include "common/json_read.h"

namespace {
constexpr const char* kFormat = "mlp-gate/vit-weights";
constexpr int kVersion = 1;

std::string hash_of_floats(const float* p, size_t n) {
  return sha256_hex(std::string(reinterpret_cast<const char*>(p), n * sizeof(float)));
}

// The first tensor of the manifest whose recorded hash differs from the bytes now in the file (its
// name, or "" when none can be told: a changed header, a short file).
std::string first_changed_tensor(const std::string& bytes, const JsonValue& tensors) {
  if (bytes.size() < 10) return "";
  const size_t hlen = (uint8_t)bytes[8] | (size_t)(uint8_t)bytes[9] << 8, data = 10 + hlen;
  for (const auto& t : tensors.items) {
    const JsonValue *off = t.get("offset"), *cnt = t.get("count"), *h = t.get("sha256"), *n = t.get("name");
    if (!off || !cnt || !h || !n) continue;
    const size_t a = data + (size_t)off->number * 4, len = (size_t)cnt->number * 4;
    if (a + len > bytes.size()) return n->text;
    if (sha256_hex(bytes.substr(a, len)) != h->text) return n->text;
  }
  return "";
}

std::string config_text(const JsonValue& v) {
  if (v.kind == JsonValue::kString) return v.text;
  if (v.kind == JsonValue::kNumber) {
    // Python's json writes 1e-05 for 1e-5 and 28 for 28: compare as numbers, shown as written.
    return v.text;
  }
  return "?";
}
}  // namespace

std::vector<std::string> tensor_hashes(const VitShape& s, const std::vector<float>& params) {
  std::vector<std::string> out;
  for (const auto& t : weight_layout(s)) out.push_back(hash_of_floats(params.data() + t.offset, t.count));
  return out;
}

LoadedWeights load_weights(const std::string& dir, const VitConfig& c, const VitShape& s) {
  const std::string mpath = dir + "/manifest.json";
  const JsonValue m = parse_json(read_file(mpath), mpath);
  if (m.kind != JsonValue::kObject) throw UserError(mpath + ": the top level is not an object");
  const std::string format = member_string(m, "format", mpath);
  if (format != kFormat) throw UserError(mpath + ": format '" + format + "', want '" + kFormat + "'");
  if ((int)member_number(m, "version", mpath) != kVersion)
    throw UserError(mpath + ": version " + member(m, "version", JsonValue::kNumber, mpath).text + ", want " +
                    std::to_string(kVersion));
  if (member_string(m, "dtype", mpath) != "float32") throw UserError(mpath + ": dtype is not float32");
  const JsonValue tensors = member(m, "tensors", JsonValue::kArray, mpath);

  // 1. Every file against its hash, before any of it is parsed.
  const JsonValue files = member(m, "files", JsonValue::kArray, mpath);
  std::string params_file, params_bytes, params_hash;
  for (const auto& f : files.items) {
    const std::string name = member_string(f, "path", mpath + ": files[]"), want = member_string(f, "sha256", mpath);
    if (name.empty() || name.find('/') != std::string::npos || name[0] == '.')
      throw UserError(mpath + ": file name '" + one_line(name) + "' is not a plain name in the folder");
    const std::string fpath = dir + "/" + name, bytes = read_file(fpath), got = sha256_hex(bytes);
    if (got != want) {
      std::string which = name == member_string(m, "file", mpath) ? first_changed_tensor(bytes, tensors) : "";
      throw UserError(fpath + ": SHA-256 " + got + " does not match the manifest's " + want +
                      (which.empty() ? "" : " (tensor " + which + " changed)") + ": the file was changed after it was written");
    }
    if (name == member_string(m, "file", mpath)) { params_file = fpath; params_bytes = bytes; params_hash = got; }
  }
  if (params_file.empty()) throw UserError(mpath + ": \"file\" is not among the hashed \"files\"");

  // 2. The model it was made for is this config's.
  const JsonValue cfg = member(m, "config", JsonValue::kObject, mpath);
  std::string diffs;
  for (const auto& key : kModelKeys) {
    const JsonValue* v = cfg.get(key);
    const std::string ours = vit_value_text(c, key);
    bool same = v && (v->kind == JsonValue::kString ? v->text == ours
                      : v->kind == JsonValue::kNumber && v->number == std::strtod(ours.c_str(), nullptr));
    if (!same) diffs += (diffs.empty() ? "" : ", ") + key + " " + (v ? config_text(*v) : "absent") + " vs " + ours;
  }
  if (!diffs.empty()) throw UserError(mpath + ": made for another model (manifest vs config): " + diffs);

  // 3. Its tensor table is ours.
  const auto layout = weight_layout(s);
  if (tensors.items.size() != layout.size())
    throw UserError(mpath + ": " + std::to_string(tensors.items.size()) + " tensors, want " + std::to_string(layout.size()));
  for (size_t i = 0; i < layout.size(); ++i) {
    const JsonValue& t = tensors.items[i];
    const std::string at = mpath + ": tensors[" + std::to_string(i) + "]";
    const std::string name = member_string(t, "name", at);
    const JsonValue shape = member(t, "shape", JsonValue::kArray, at);
    bool same = name == layout[i].name && shape.items.size() == layout[i].shape.size() &&
                (size_t)member_number(t, "offset", at) == layout[i].offset &&
                (size_t)member_number(t, "count", at) == layout[i].count;
    for (size_t k = 0; same && k < shape.items.size(); ++k) same = shape.items[k].number == layout[i].shape[k];
    if (!same) throw UserError(at + ": " + name + " is not the layout's " + layout[i].name + " (cuda/transformer/model.h)");
  }

  LoadedWeights w;
  w.params = read_npy_f32(params_file, {n_params(s)});
  w.params_sha256 = params_hash;
  const auto hashes = tensor_hashes(s, w.params);
  for (size_t i = 0; i < layout.size(); ++i)
    if (hashes[i] != member_string(tensors.items[i], "sha256", mpath))
      throw UserError(params_file + ": tensor " + layout[i].name + " does not match its SHA-256 in " + mpath);
  std::string origin = "weights";
  if (const JsonValue* o = m.get("origin"); o && o->get("kind") && o->get("kind")->kind == JsonValue::kString)
    origin = o->get("kind")->text;
  w.source = dir + " (" + origin + ", params.npy " + params_hash.substr(0, 12) + ")";
  return w;
}
