#include "transformer/timing.h"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/common.h"
#include "common/cuda_check.h"
#include "common/json.h"

namespace {

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { if (s) cudaStreamDestroy(s); }
};
struct Events {
  cudaEvent_t a = nullptr, b = nullptr;
  Events() {
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
  }
  ~Events() {
    if (a) cudaEventDestroy(a);
    if (b) cudaEventDestroy(b);
  }
};

// The first `batch` images, the test set repeated when the batch is larger.
void upload(VitForward& f, const std::vector<float>& images, int n, int batch) {
  const size_t px = (size_t)f.shape().image * f.shape().image;
  for (int done = 0; done < batch;) {
    const int k = std::min(n, batch - done);
    CUDA_CHECK(cudaMemcpy(f.images() + (size_t)done * px, images.data(), (size_t)k * px * sizeof(float),
                          cudaMemcpyHostToDevice));
    done += k;
  }
}

template <class Launch>
TimingStats time_it(Launch&& launch, cudaStream_t st, int warmup, int repeats) {
  Events ev;
  for (int i = 0; i < warmup; ++i) launch();
  CUDA_CHECK(cudaStreamSynchronize(st));
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    CUDA_CHECK(cudaEventRecord(ev.a, st));
    launch();
    CUDA_CHECK(cudaEventRecord(ev.b, st));
    CUDA_CHECK(cudaEventSynchronize(ev.b));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, ev.a, ev.b));
    t.push_back(ms);
  }
  return summarise(t);
}

std::string stats_json(const TimingStats& t) {
  return Json::object()
      .set("median_ms", Json::num(t.median_ms)).set("mean_ms", Json::num(t.mean_ms))
      .set("min_ms", Json::num(t.min_ms)).set("max_ms", Json::num(t.max_ms)).set("cv_pct", Json::num(t.cv_pct))
      .set("times_ms", Json::nums(t.times_ms))
      .done();
}

}  // namespace

TimingStats summarise(const std::vector<double>& times_ms) {
  TimingStats r;
  r.times_ms = times_ms;
  const size_t n = times_ms.size();
  if (n == 0) return r;
  std::vector<double> s = times_ms;
  std::sort(s.begin(), s.end());
  r.median_ms = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  double sum = 0;
  for (double x : s) sum += x;
  r.mean_ms = sum / n;
  double var = 0;
  for (double x : s) var += (x - r.mean_ms) * (x - r.mean_ms);
  r.cv_pct = n > 1 ? 100.0 * std::sqrt(var / (n - 1)) / r.mean_ms : 0.0;
  r.min_ms = s.front();
  r.max_ms = s.back();
  return r;
}

std::vector<TimingRow> time_forward(VitForward& f, const std::vector<float>& images, int n,
                                    const std::vector<int>& batches, const std::vector<GemmEngine>& engines,
                                    int warmup, int repeats) {
  std::vector<TimingRow> rows;
  Stream st;
  const GemmEngine before = f.engine();
  for (int b : batches)
    for (GemmEngine e : engines) {
    if (b > f.max_batch()) throw UserError("batch " + std::to_string(b) + " exceeds the max batch");
    upload(f, images, n, b);
    f.set_engine(e);
    f.enqueue(f.images(), b, st.s);  // the buffers the tuner reads
    const VitForward::TuneReport tuned = f.tune(b, st.s);
    TimingRow r;
    r.batch = b;
    r.engine = e;
    r.tiles = f.tile_plan(b);
    r.tuning = tuned.text;
    r.tile_mismatches = tuned.mismatched;
    r.stream = time_it([&] { f.enqueue(f.images(), b, st.s); }, st.s, warmup, repeats);
    ForwardGraph g(f, f.images(), b, st.s);
    r.graph = time_it([&] { g.launch(st.s); }, st.s, warmup, repeats);
    const double flop = forward_flop(f.shape()) * b;
    std::printf("ours  batch %6d  %-6s  stream %9.4f ms (cv %4.1f%%)  graph %9.4f ms (cv %4.1f%%)  %8.0f img/s  %.1f TFLOP/s\n",
                b, engine_name(e), r.stream.median_ms, r.stream.cv_pct, r.graph.median_ms, r.graph.cv_pct,
                b / (std::min(r.stream.median_ms, r.graph.median_ms) / 1e3),
                flop / (std::min(r.stream.median_ms, r.graph.median_ms) / 1e3) / 1e12);
    std::printf("      tiles: %s\n", r.tiles.c_str());
    rows.push_back(std::move(r));
  }
  f.set_engine(before);
  return rows;
}

std::string timing_json(const std::vector<TimingRow>& rows, const VitShape& s, int warmup, int repeats) {
  Json a = Json::array();
  for (const auto& r : rows)
    a.add(Json::object()
              .set("batch", Json::num(r.batch)).set("engine", Json::str(engine_name(r.engine)))
              .set("stream", stats_json(r.stream)).set("graph", stats_json(r.graph))
              .set("tiles", Json::str(r.tiles)).set("tuning", Json::str(r.tuning))
              .set("tile_mismatches", Json::num(r.tile_mismatches))
              .done());
  return Json::object()
      .set("flop_per_image", Json::num(forward_flop(s))).set("warmup", Json::num(warmup))
      .set("repeats", Json::num(repeats)).set("rows", a.done())
      .done();
}

void profile_forward(VitForward& f, const std::vector<float>& images, int n, int batch, const std::string& range) {
  Stream st;
  upload(f, images, n, batch);
  f.enqueue(f.images(), batch, st.s);
  f.tune(batch, st.s);  // the tiles the timed runs use
  for (int i = 0; i < 3; ++i) f.enqueue(f.images(), batch, st.s);
  CUDA_CHECK(cudaStreamSynchronize(st.s));
  nvtxRangePushA(range.c_str());
  f.enqueue(f.images(), batch, st.s);
  CUDA_CHECK(cudaStreamSynchronize(st.s));
  nvtxRangePop();
}
