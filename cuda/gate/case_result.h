// cuda/gate/case_result.h — one gate case's verdict (cuda/gate/cases.h runs the cases; the console table,
// run.json and the hints read these).
#pragma once
#include <string>

struct CaseResult {
  int id = 0;
  std::string name;
  bool passed = false;
  double value = 0;   // the measured figure (NaN when it could not be measured)
  double limit = 0;   // the bound it must stay under (NaN when the case has none)
  std::string detail; // how value and limit are defined, or why it failed
  std::string note;   // what a pass allowed ("odd shape 37-19-3: declined (MLP_ERR_UNSUPPORTED)"); "" for none
};
