// cuda/common/json_read.h — a small strict JSON reader (RFC 8259: objects, arrays, strings with
// their escapes, numbers, true, false, null): the transformer's weights manifest, and the run.json documents the
// gate's verdict reads (gate/verdict.h); the project's writer is cuda/common/json.h. A malformed text is a
// UserError "<where>: malformed JSON at byte N: ...".
#pragma once
#include <string>
#include <utility>
#include <vector>

struct JsonValue {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string text;       // a string's value, or a number as written
  std::vector<JsonValue> items;                          // array
  std::vector<std::pair<std::string, JsonValue>> members;  // object, in file order

  // The member `key` of an object; nullptr when absent (or not an object).
  const JsonValue* get(const std::string& key) const;
};

JsonValue parse_json(const std::string& text, const std::string& where);

// Accessors that throw a UserError "<where>: <key> ..." when the member is absent or of another kind.
const JsonValue& member(const JsonValue& obj, const std::string& key, JsonValue::Kind kind, const std::string& where);
std::string member_string(const JsonValue& obj, const std::string& key, const std::string& where);
double member_number(const JsonValue& obj, const std::string& key, const std::string& where);
