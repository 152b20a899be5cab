#include "paths/train_loop.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "common/cuda_check.h"
#include "common/json.h"
#include "common/run_stats.h"

void MemoryWatch::start() {
  CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
  min_free = free_before;
}

void MemoryWatch::sample() {
  size_t f = 0, t = 0;
  CUDA_CHECK(cudaMemGetInfo(&f, &t));
  if (f < min_free) min_free = f;
}

std::string MemoryWatch::json() const {
  return Json::object().set("device_total_bytes", Json::num((long long)total))
      .set("free_before_bytes", Json::num((long long)free_before))
      .set("peak_used_bytes", Json::num((long long)(free_before - min_free))).done();
}

MemoryWatch& memory_watch() {
  static MemoryWatch w;
  return w;
}

TrainState::TrainState(const Recipe& R, MlpShape shape, const std::vector<float>& init,
                       const std::vector<std::vector<int32_t>>& orders, int epochs)
    : s(shape), n(R.train_size), batch(R.batch), steps((R.train_size + R.batch - 1) / R.batch) {
  try {
    const size_t total = mlp_offsets(s).total;
    CUDA_CHECK(cudaMalloc(&params, total * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&velocity, total * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&ws, mlp_workspace_floats(s, batch) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&step_loss, (size_t)steps * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&order, (size_t)epochs * n * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(params, init.data(), total * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(velocity, 0, total * sizeof(float)));
    for (int e = 0; e < epochs; ++e)
      CUDA_CHECK(cudaMemcpy(order + (size_t)e * n, orders[(size_t)e].data(), (size_t)n * sizeof(int),
                            cudaMemcpyHostToDevice));
  } catch (...) {
    release();  // a constructor that throws gets no destructor call
    throw;
  }
}

TrainState::~TrainState() { release(); }

void TrainState::release() noexcept {
  cudaFree(params);
  cudaFree(velocity);
  cudaFree(ws);
  cudaFree(step_loss);
  cudaFree(order);
}

mlp::EpochArgs TrainState::epoch(const Recipe& R, const DeviceData& dd, int e, cudaStream_t stream) const {
  return {s, params, velocity, dd.train_x, dd.train_y, order + (size_t)e * n, n, batch, (float)R.lr,
          (float)R.momentum, ws, step_loss, stream};
}

PathRun train_path(mlp::KernelPath& path, const Recipe& R, MlpShape s, const std::vector<float>& init,
                   const std::vector<std::vector<int32_t>>& orders, const DeviceData& dd, const Dataset& data,
                   int epochs, bool progress, bool check_loss) {
  PathRun run;
  const int n = R.train_size, steps = (n + R.batch - 1) / R.batch;
  run.name = path.name();
  run.accumulator = path.accumulator();
  run.precision = precision_name(path.precision());
  run.launches_per_step = path.launches_per_step(steps);
  const mlp::PathFit fit = path.fit(mlp::effective_limits(), s, R.batch);
  if (!fit.runs()) {
    run.skipped = fit.skipped;
    return run;
  }
  run.config = fit.config;
  const int chunk = 10000;
  TrainState ts(R, s, init, orders, epochs);
  float* step_loss = ts.step_loss;
  float* eval_scratch;
  CUDA_CHECK(cudaMalloc(&eval_scratch, (size_t)chunk * (s.hidden + s.out) * sizeof(float)));
  memory_watch().sample();
  cudaStream_t st;
  CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t t0, t1;
  CUDA_CHECK(cudaEventCreate(&t0));
  CUDA_CHECK(cudaEventCreate(&t1));
  std::vector<float> losses((size_t)steps);
  try {
    for (int e = 0; e < epochs; ++e) {
      CUDA_CHECK(cudaMemsetAsync(step_loss, 0xFF, (size_t)steps * sizeof(float), st));  // NaN poison
      mlp::EpochArgs a = ts.epoch(R, dd, e, st);
      mlp::hold_stream(st);  // the epoch's first launch is queued before t0 runs (cuda/paths/kernel_path.h)
      CUDA_CHECK(cudaEventRecord(t0, st));
      path.epoch(a);
      CUDA_CHECK(cudaEventRecord(t1, st));
      CUDA_CHECK(cudaEventSynchronize(t1));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
      CUDA_CHECK(cudaMemcpy(losses.data(), step_loss, (size_t)steps * sizeof(float), cudaMemcpyDeviceToHost));
      double loss = 0;
      for (int t = 0; t < steps; ++t) {
        if (check_loss && !std::isfinite(losses[(size_t)t]))
          throw std::runtime_error("non-finite loss " + std::to_string(losses[(size_t)t]) + " at epoch " +
                                   std::to_string(e) + " step " + std::to_string(t));
        loss += (double)losses[(size_t)t] * std::min(R.batch, n - t * R.batch);
      }
      mlp::GpuEval ev = mlp::evaluate_on_device(s, ts.params, dd.test_x, data.test_y.data(), data.n_test, eval_scratch,
                                                chunk, st);
      run.epoch_ms.push_back(ms);
      run.loss_per_epoch.push_back(loss / n);
      run.test_accuracy_per_epoch.push_back(ev.accuracy);
      if (progress)
        std::fprintf(stderr, "  %-10s epoch %2d/%d  %8.3f ms  loss %.4f  test acc %.2f%%\n", run.name.c_str(), e + 1,
                     epochs, ms, loss / n, 100 * ev.accuracy);
    }
  } catch (const mlp::SubmissionError& e) {
    run.ok = false;
    run.error = e.what();
  } catch (const CudaError&) {
    throw;  // a CUDA fault poisons the context: stop the run
  } catch (const std::runtime_error& e) {
    run.ok = false;
    run.error = e.what();
  }
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  cudaStreamDestroy(st);
  cudaFree(eval_scratch);
  const EpochStats es = summarise_epochs(run.epoch_ms);
  run.mean = es.mean, run.median = es.median, run.min = es.min, run.max = es.max, run.cv = es.cv;
  return run;
}

std::vector<float> one_epoch_params(mlp::KernelPath& path, const Recipe& R, MlpShape s, const std::vector<float>& init,
                                    const std::vector<int32_t>& order0, const DeviceData& dd) {
  const size_t total = mlp_offsets(s).total;
  TrainState ts(R, s, init, {order0}, 1);
  std::vector<float> out(total);
  try {
    path.epoch(ts.epoch(R, dd, 0, nullptr));
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(out.data(), ts.params, total * sizeof(float), cudaMemcpyDeviceToHost));
  } catch (const mlp::SubmissionError&) {
    out.clear();
  }
  return out;
}
