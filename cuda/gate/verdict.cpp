#include "gate/verdict.h"

#include <algorithm>
#include <cstring>

#include "common/common.h"
#include "common/json.h"
#include "gate/case_result.h"
#include "gate/catalog.h"
#include "gate/hints.h"

namespace {

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }
bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
bool ended_by_itself(const std::string& ended) { return ended == "exited 0" || ended == "exited 1"; }

const JsonValue* member_of(const JsonValue* obj, const char* key) {
  return obj && obj->kind == JsonValue::kObject ? obj->get(key) : nullptr;
}
std::string string_of(const JsonValue* v) { return v && v->kind == JsonValue::kString ? v->text : ""; }
std::vector<std::string> strings_of(const JsonValue* v) {
  std::vector<std::string> out;
  if (v && v->kind == JsonValue::kArray)
    for (const auto& x : v->items)
      if (x.kind == JsonValue::kString) out.push_back(x.text);
  return out;
}

const StageInfo* find_stage(const std::string& name) {
  for (const auto& s : gate_stages())
    if (name == s.name) return &s;
  return nullptr;
}

// The path a "path NAME: ..." failure names ("" when it names none).
std::string named_path(const std::string& failure) {
  if (failure.rfind("path ", 0) != 0) return "";
  const size_t colon = failure.find(':', 5);
  return colon == std::string::npos ? "" : failure.substr(5, colon - 5);
}

// The deciding cases `run` had to have (the header's rule).
std::vector<int> required_cases(const JsonValue& run) {
  std::vector<std::string> stages;
  const std::string part = string_of(run.get("stage"));
  const JsonValue* recs = member_of(run.get("supervisor"), "stages");
  if (!part.empty()) {
    stages.push_back(part);
  } else if (recs && recs->kind == JsonValue::kArray && !recs->items.empty()) {
    for (const auto& s : recs->items) {
      const std::string name = string_of(member_of(&s, "name"));
      if (!name.empty() && !contains(stages, name)) stages.push_back(name);
    }
  } else {
    for (const auto& name : binary_stage_names()) stages.push_back(name);
  }
  std::vector<int> ids;
  for (const auto& name : stages) {
    const StageInfo* st = find_stage(name);
    if (!st) continue;  // a stage the catalog does not know holds no case of ours
    for (int id : st->cases) {
      const CaseInfo* c = find_case(id);
      if (c && c->decides && !contains(ids, id)) ids.push_back(id);
    }
  }
  // What the owner required when it wrote the document's verdict (the gate of that run) holds too.
  const JsonValue* held = member_of(run.get("verdict"), "required_cases");
  if (held && held->kind == JsonValue::kArray)
    for (const auto& x : held->items)
      if (x.kind == JsonValue::kNumber && !contains(ids, (int)x.number)) ids.push_back((int)x.number);
  return ids;
}

}  // namespace

std::string GateVerdict::first_hint() const { return passed || hints.empty() ? "" : hints.front(); }

const char* verdict_word(const GateVerdict& v) { return v.passed ? "PASS" : "FAIL"; }

namespace {

// The cases: every row as the hints read it (a row not true or false is "not run"); a deciding row
// that is not true, a required case with no row, or a failing row of an id the catalog does not know
// fails, in the catalog's table order.
std::vector<CaseResult> judge_cases(const JsonValue& run, const std::string& where, GateVerdict& v) {
  const JsonValue* rows = run.get("cases");
  if (!rows || rows->kind != JsonValue::kArray) throw UserError(where + ": \"cases\" is missing or not an array");
  std::vector<CaseResult> cases;
  std::vector<int> seen;
  for (const auto& row : rows->items) {
    const JsonValue* id = member_of(&row, "id");
    if (!id || id->kind != JsonValue::kNumber) throw UserError(where + ": a case row without a numeric \"id\"");
    const JsonValue* passed = member_of(&row, "passed");
    const bool judged = passed && passed->kind == JsonValue::kBool;
    CaseResult c;
    c.id = (int)id->number;
    c.name = string_of(member_of(&row, "name"));
    c.passed = judged && passed->boolean;
    c.detail = string_of(member_of(&row, "detail"));
    if (!judged && c.detail.rfind("not run", 0) != 0) c.detail = "not run" + (c.detail.empty() ? "" : ": " + c.detail);
    cases.push_back(c);
    seen.push_back(c.id);
  }
  auto fail_case = [&](int id, const std::string& why) {
    if (contains(v.failed_cases, id)) return;
    v.failed_cases.push_back(id);
    const CaseInfo* info = find_case(id);
    v.reasons.push_back("case " + std::to_string(id) + " " + (info ? info->name : "?") + ": " +
                        (why.empty() ? "failed" : why));
  };
  for (const auto& info : gate_cases()) {  // table order
    if (!info.decides) continue;
    for (const auto& c : cases)
      if (c.id == info.id && !c.passed) fail_case(c.id, c.detail);
    if (contains(v.required_cases, info.id) && !contains(seen, info.id)) fail_case(info.id, "no row in run.json");
  }
  for (const auto& c : cases)  // an id the catalog does not know cannot be waved through
    if (!find_case(c.id) && !c.passed) fail_case(c.id, c.detail);
  return cases;
}

// Why a path record fails ("" when it passes or was skipped on this device, save the gated path).
std::string record_failure(const std::string& name, const JsonValue& rec, const std::string& gated) {
  if (const JsonValue* skipped = member_of(&rec, "skipped"))
    return name == gated ? "path " + name + ": the gated path was skipped: " + string_of(skipped) : "";
  const JsonValue* ok = member_of(&rec, "passed");
  if (ok && ok->kind == JsonValue::kBool && ok->boolean) return "";
  std::string why = string_of(member_of(&rec, "failure"));
  if (why.empty()) why = string_of(member_of(&rec, "error"));
  return why.rfind("path ", 0) == 0 ? why : "path " + name + ": " + (why.empty() ? "failed its checks" : why);
}

// The paths: every failure string of the document (top level and the supervisor block's), then each
// record's own failure where no string names its path.
std::vector<std::string> judge_paths(const JsonValue& run, GateVerdict& v) {
  std::vector<std::string> path_failures = strings_of(run.get("path_failures"));
  for (const auto& f : strings_of(member_of(run.get("supervisor"), "path_failures")))
    if (!contains(path_failures, f)) path_failures.push_back(f);
  const JsonValue* paths = run.get("paths");
  if (paths && paths->kind == JsonValue::kObject)
    for (const auto& [name, rec] : paths->members) {
      bool named = false;
      for (const auto& f : path_failures) named |= named_path(f) == name;
      const std::string f = named ? "" : record_failure(name, rec, string_of(run.get("gated_path")));
      if (!f.empty()) path_failures.push_back(f);
    }
  for (const auto& f : path_failures) {
    v.reasons.push_back(f);
    const std::string name = named_path(f).empty() ? f : named_path(f);
    if (!contains(v.failed_paths, name)) v.failed_paths.push_back(name);
  }
  return path_failures;
}

// The stages of mlp_train's that did not end by themselves (a sanitizer stage's row speaks for it):
// their records, the supervisor's stage_failures, or one process's own ending. Returns the endings.
std::vector<std::string> judge_stages(const JsonValue& run, GateVerdict& v) {
  std::vector<std::string> endings;
  auto fail_stage = [&](const std::string& name, const std::string& ended) {
    if (contains(v.failed_stages, name)) return;
    v.failed_stages.push_back(name);
    v.reasons.push_back((name == "run" ? std::string("the run") : "stage " + name) + ": " + ended);
    endings.push_back(ended);
  };
  auto ours = [](const std::string& name) {
    const StageInfo* st = find_stage(name);
    return !st || std::strcmp(st->runner, "mlp_train") == 0;
  };
  const JsonValue* sup = run.get("supervisor");
  const JsonValue* recs = member_of(sup, "stages");
  if (recs && recs->kind == JsonValue::kArray) {
    for (const auto& s : recs->items) {
      const std::string name = string_of(member_of(&s, "name")), ended = string_of(member_of(&s, "ended"));
      if (ours(name) && !ended_by_itself(ended))
        fail_stage(name.empty() ? "?" : name, ended.empty() ? "no ending recorded" : ended);
    }
    for (const auto& f : strings_of(member_of(sup, "stage_failures"))) {
      const size_t colon = f.find(": ");
      const std::string name = colon == std::string::npos ? f : f.substr(0, colon);
      if (ours(name)) fail_stage(name, colon == std::string::npos ? "failed" : f.substr(colon + 2));
    }
  } else if (sup && sup->kind == JsonValue::kObject) {  // one process (--one-process): the run's own ending
    const std::string ended = string_of(member_of(sup, "ended"));
    if (!ended_by_itself(ended)) fail_stage("run", ended.empty() ? "no ending recorded" : ended);
  }
  return endings;
}

}  // namespace

GateVerdict gate_verdict(const JsonValue& run, const std::string& where) {
  if (run.kind != JsonValue::kObject) throw UserError(where + ": not a JSON object");
  GateVerdict v;
  v.required_cases = required_cases(run);
  const std::vector<CaseResult> cases = judge_cases(run, where, v);
  const std::vector<std::string> path_failures = judge_paths(run, v);
  const std::vector<std::string> endings = judge_stages(run, v);
  v.passed = v.reasons.empty();
  v.hints = hints_for(cases, path_failures, endings);
  if (!v.passed && v.hints.empty()) v.hints.push_back(v.reasons.front());  // never a FAIL without a hint
  return v;
}

std::string verdict_json(const GateVerdict& v) {
  Json reasons = Json::array(), cases = Json::array(), paths = Json::array(), stages = Json::array(),
       required = Json::array(), hints = Json::array();
  for (const auto& r : v.reasons) reasons.add(Json::str(r));
  for (int id : v.failed_cases) cases.add(Json::num(id));
  for (const auto& p : v.failed_paths) paths.add(Json::str(p));
  for (const auto& s : v.failed_stages) stages.add(Json::str(s));
  for (int id : v.required_cases) required.add(Json::num(id));
  for (const auto& h : v.hints) hints.add(Json::str(h));
  return Json::object()
      .set("passed", Json::boolean(v.passed))
      .set("word", Json::str(verdict_word(v)))
      .set("first_hint", Json::str(v.first_hint()))
      .set("reasons", reasons.done())
      .set("failed_cases", cases.done())
      .set("failed_paths", paths.done())
      .set("failed_stages", stages.done())
      .set("required_cases", required.done())
      .set("hints", hints.done())
      .done();
}
