#include "transformer/checks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "common/common.h"
#include "common/cuda_check.h"
#include "common/json.h"
#include "transformer/error_scale.h"

namespace {

constexpr double kU = 1.0 / 16777216.0;  // 2^-24, float32's unit roundoff

std::vector<float> download(const float* p, size_t n) {
  std::vector<float> h(n);
  CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
  return h;
}

struct DevTap {
  float* p = nullptr;
  explicit DevTap(size_t n) { CUDA_CHECK(cudaMalloc(&p, n * sizeof(float))); }
  ~DevTap() { if (p) cudaFree(p); }
  DevTap(const DevTap&) = delete;
  DevTap& operator=(const DevTap&) = delete;
};

// Rows [r0, r0 + n) of a [rows × w] float array, as doubles.
std::vector<double> slice(const std::vector<float>& a, size_t w, size_t r0, size_t n) {
  return std::vector<double>(a.begin() + r0 * w, a.begin() + (r0 + n) * w);
}

// Columns [c0, c0 + w) of a [rows × stride] array.
template <class T>
std::vector<T> columns(const std::vector<T>& a, size_t stride, size_t c0, size_t w) {
  std::vector<T> out;
  out.reserve(a.size() / stride * w);
  for (size_t r = 0; r < a.size() / stride; ++r)
    out.insert(out.end(), a.begin() + r * stride + c0, a.begin() + r * stride + c0 + w);
  return out;
}

void append(LocalBound& to, const LocalBound& b) {
  to.ref.insert(to.ref.end(), b.ref.begin(), b.ref.end());
  to.scale.insert(to.scale.end(), b.scale.begin(), b.scale.end());
  to.depth = b.depth;
  to.var_depth = b.var_depth;
}

// The errors of `got` against `ref` relative to `scale`: (worst, norm-wise), infinity for a NaN.
std::pair<double, double> errors(const std::vector<float>& got, const std::vector<double>& ref,
                                 const std::vector<double>& scale) {
  double worst = 0, num = 0, den = 0;
  if (got.size() != ref.size()) return {INFINITY, INFINITY};
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = (double)got[i] - ref[i];
    if (!std::isfinite(e)) return {INFINITY, INFINITY};
    worst = std::max(worst, std::fabs(e) / scale[i]);
    num += e * e;
    den += scale[i] * scale[i];
  }
  return {worst, std::sqrt(num / den)};
}

void push(std::vector<CheckRow>& rows, CheckRow r) {
  r.passed = r.value <= r.limit;
  rows.push_back(r);
}

// One operation from the device's own inputs: worst against D·u, norm-wise against 4·√D_var·u (D_var = D
// but where a GEMM's operands are rounded: error_scale.h).
void compare_op(std::vector<CheckRow>& rows, const std::string& name, const std::vector<float>& got, const LocalBound& b) {
  const auto [worst, norm] = errors(got, b.ref, b.scale);
  const bool rounded = b.var_depth > 0;
  push(rows, {name, "worst", worst, b.depth * kU, b.depth, false,
              rounded ? "one operation from the device's float32 inputs, its GEMM's operands rounded: max |y - y64| / L, "
                        "limit D*u, D = the reduction's length + (2*u_op + u_op^2)/u (+ u_op/u for a rounded output)"
                      : "one operation from the device's float32 inputs: max |y - y64| / L, limit D*u (L its |.|-scale)"});
  push(rows, {name, "normwise", norm, 4 * std::sqrt(b.normwise_depth()) * kU, b.normwise_depth(), false,
              rounded ? "one operation from the device's float32 inputs, its GEMM's operands rounded: ||y - y64||_2 / "
                        "||L||_2, limit 4*sqrt(D_var)*u, D_var = the reduction's length + 2*(u_op/u)^2 (+ (u_op/u)^2)"
                      : "one operation from the device's float32 inputs: ||y - y64||_2 / ||L||_2, limit 4*sqrt(D)*u"});
}

// From the images: against the propagated standard deviation u·R (error_scale.h part 2).
void compare_e2e(std::vector<CheckRow>& rows, const std::string& name, const std::vector<float>& got,
                 const std::vector<double>& ref, const std::vector<double>& rms) {
  const auto [worst, norm] = errors(got, ref, rms);
  push(rows, {name, "worst", worst, kWorstSigmas * kU, 0, false,
              "from the images: max |y - y64| / R, limit 8*u (u*R the propagated rounding standard deviation)"});
  push(rows, {name, "normwise", norm, kNormwiseSigmas * kU, 0, false,
              "from the images: ||y - y64||_2 / ||R||_2, limit 4*u"});
}

void print_rows(const std::vector<CheckRow>& rows) {
  std::printf("%-2s %-18s %-9s %12s %12s  %s\n", "#", "check", "measure", "value", "limit", "verdict");
  int i = 0;
  for (const auto& r : rows)
    std::printf("%-2d %-18s %-9s %12.4g %12.4g  %s\n", ++i, r.name.c_str(), r.measure.c_str(), r.value, r.limit,
                r.passed ? "PASS" : "FAIL");
}

int argmax(const double* v, int n) { return (int)(std::max_element(v, v + n) - v); }
int argmax(const float* v, int n) { return (int)(std::max_element(v, v + n) - v); }

}  // namespace

std::string check_rows_json(const std::vector<CheckRow>& rows) {
  Json a = Json::array();
  for (const auto& r : rows)
    a.add(Json::object()
              .set("name", Json::str(r.name)).set("measure", Json::str(r.measure))
              .set("value", Json::num(r.value)).set("limit", Json::num(r.limit)).set("depth", Json::num(r.depth))
              .set("passed", Json::boolean(r.passed)).set("detail", Json::str(r.detail))
              .done());
  return a.done();
}

OperandRounding operand_rounding(GemmEngine e) {
  OperandRounding r;
  r.rel = e == GemmEngine::kBf16 ? 65536.0 : 0.0;  // 2^-8 / 2^-24
  return r;
}

CheckReport run_checks(VitForward& f, const CheckInputs& in) {
  const OperandRounding rounding = operand_rounding(f.engine());
  const VitShape& s = *in.s;
  const int T = s.tokens, d = s.d, H = s.heads, m = s.mlp, C = s.classes, px = s.image * s.image;
  const int nb = std::min(in.layer_batch, in.n_images), nl = std::min(in.logits_batch, in.n_images);
  const int nmax = std::max(nb, nl);
  if (nmax > f.max_batch()) throw UserError("check batches exceed the forward's max batch");
  for (int idx : in.explain)
    if (idx < 0 || idx >= in.n_images) throw UserError("--explain: image " + std::to_string(idx) + " is not a test image");

  // ---- the device
  CUDA_CHECK(cudaMemcpy(f.images(), in.images->data(), (size_t)nmax * px * sizeof(float), cudaMemcpyHostToDevice));
  f.enqueue(f.images(), nb, nullptr, 0);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> g_x0 = download(f.x_a(), (size_t)nb * T * d);
  DevTap t_ln1((size_t)nb * T * d), t_probs((size_t)nb * H * T * T), t_ln2((size_t)nb * T * d);
  ForwardTaps taps;
  taps.ln1 = t_ln1.p;
  taps.probs = t_probs.p;
  taps.ln2 = t_ln2.p;
  f.enqueue(f.images(), nb, nullptr, 1, &taps);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> g_ln1 = download(t_ln1.p, (size_t)nb * T * d), g_qkv = download(f.qkv(), (size_t)nb * T * 3 * d),
                           g_probs = download(t_probs.p, (size_t)nb * H * T * T), g_heads = download(f.heads(), (size_t)nb * T * d),
                           g_xattn = download(f.x_b(), (size_t)nb * T * d), g_ln2 = download(t_ln2.p, (size_t)nb * T * d),
                           g_u = download(f.mlp_hidden(), (size_t)nb * T * m), g_xout = download(f.x_a(), (size_t)nb * T * d);
  f.enqueue(f.images(), nl, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> g_logits = download(f.logits(), (size_t)nl * C), g_pooled = download(f.pooled(), (size_t)nl * d),
                           g_xlast = download(f.x_a(), (size_t)nl * T * d);

  // The explained images' own forward: gathered into one batch.
  std::vector<float> g_explain;
  const int ne = (int)in.explain.size();
  if (ne > 0) {
    if (ne > f.max_batch()) throw UserError("--explain lists more images than the max batch");
    std::vector<float> imgs;
    for (int idx : in.explain) imgs.insert(imgs.end(), in.images->begin() + (size_t)idx * px, in.images->begin() + (size_t)(idx + 1) * px);
    CUDA_CHECK(cudaMemcpy(f.images(), imgs.data(), imgs.size() * sizeof(float), cudaMemcpyHostToDevice));
    f.enqueue(f.images(), ne, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    g_explain = download(f.logits(), (size_t)ne * C);
  }

  // ---- the float64 reference, image by image (OpenMP): each operation from the device's own inputs,
  // and the whole forward from the images (for layer one's output and the logits)
  const auto t0 = std::chrono::steady_clock::now();
  const RefWeights w = ref_weights(s, *in.params);
  const RefWeights::Layer& w0 = w.layers[0];
  const size_t rT = (size_t)T;
  enum { kEmbed, kLn1, kQkv, kProbs, kHeads, kAttn, kLn2, kHidden, kOut, kNumOps };
  std::vector<std::vector<LocalBound>> op(kNumOps, std::vector<LocalBound>(nb));
  std::vector<LocalBound> pool_b(nl), head_b(nl);
  std::vector<int> todo(nmax);
  for (int i = 0; i < nmax; ++i) todo[i] = i;
  todo.insert(todo.end(), in.explain.begin(), in.explain.end());
  const int n_todo = (int)todo.size();
  std::vector<std::vector<double>> e2e_out(nb), e2e_out_rms(nb);
  std::vector<double> ref_logits((size_t)n_todo * C), logit_rms((size_t)n_todo * C);
#pragma omp parallel for schedule(dynamic, 1)
  for (int k = 0; k < n_todo; ++k) {
    const int i = todo[k];
    const float* img = in.images->data() + (size_t)i * px;
    ImageTrace tr;
    ImageRms rms;
    ref_image(s, w, img, tr);
    rms_image(s, w, tr, rms, rounding);
    std::copy(tr.logits.begin(), tr.logits.end(), ref_logits.begin() + (size_t)k * C);
    std::copy(rms.logits.begin(), rms.logits.end(), logit_rms.begin() + (size_t)k * C);
    if (k < nb) {
      e2e_out[k] = tr.layers[0].x_out;
      e2e_out_rms[k] = rms.layers[0].x_out;
      const std::vector<double> x0 = slice(g_x0, d, k * rT, rT), ln1 = slice(g_ln1, d, k * rT, rT),
                                qv = slice(g_qkv, 3 * d, k * rT, rT), pr = slice(g_probs, (size_t)H * T * T, k, 1),
                                hd = slice(g_heads, d, k * rT, rT), xa = slice(g_xattn, d, k * rT, rT),
                                ln2 = slice(g_ln2, d, k * rT, rT), uu = slice(g_u, m, k * rT, rT);
      op[kEmbed][k] = local_embed(s, w, ref_patches(s, img));
      op[kLn1][k] = local_layernorm(x0, T, d, w0.ln1_w, w0.ln1_b, s.eps64);
      op[kQkv][k] = local_linear(ln1, T, d, w0.qkv_w, w0.qkv_b, 3 * d, nullptr, false, rounding);
      op[kProbs][k] = local_attention_probs(s, qv.data(), rounding);
      op[kHeads][k] = local_attention_heads(s, pr.data(), qv.data(), rounding);
      op[kAttn][k] = local_linear(hd, T, d, w0.proj_w, w0.proj_b, d, &x0, false, rounding);
      op[kLn2][k] = local_layernorm(xa, T, d, w0.ln2_w, w0.ln2_b, s.eps64);
      op[kHidden][k] = local_linear(ln2, T, d, w0.fc1_w, w0.fc1_b, m, nullptr, true, rounding);
      op[kOut][k] = local_linear(uu, T, m, w0.fc2_w, w0.fc2_b, d, &xa, false, rounding);
    }
    if (k < nl) {
      const std::vector<double> xl = slice(g_xlast, d, k * rT, rT), pooled = slice(g_pooled, d, k, 1);
      pool_b[k] = local_ln_pool(s, xl.data(), w.norm_w, w.norm_b);
      head_b[k] = local_linear(pooled, 1, d, w.head_w, w.head_b, C);
    }
  }
  CheckReport rep;
  rep.ref_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::vector<LocalBound> all(kNumOps);
  for (int o = 0; o < kNumOps; ++o)
    for (int k = 0; k < nb; ++k) append(all[o], op[o][k]);
  LocalBound pool_all, head_all;
  for (int k = 0; k < nl; ++k) {
    append(pool_all, pool_b[k]);
    append(head_all, head_b[k]);
  }
  auto& rows = rep.rows;
  compare_op(rows, "embed", g_x0, all[kEmbed]);
  compare_op(rows, "L1.ln1", g_ln1, all[kLn1]);
  const char* qkv_names[3] = {"L1.q", "L1.k", "L1.v"};
  for (int part = 0; part < 3; ++part) {
    LocalBound b{columns(all[kQkv].ref, 3 * d, part * d, d), columns(all[kQkv].scale, 3 * d, part * d, d), all[kQkv].depth,
                 all[kQkv].var_depth};
    compare_op(rows, qkv_names[part], columns(g_qkv, 3 * d, part * d, d), b);
  }
  compare_op(rows, "L1.attn_weights", g_probs, all[kProbs]);
  compare_op(rows, "L1.attn_heads", g_heads, all[kHeads]);
  compare_op(rows, "L1.attn_out", g_xattn, all[kAttn]);
  compare_op(rows, "L1.ln2", g_ln2, all[kLn2]);
  compare_op(rows, "L1.mlp_hidden", g_u, all[kHidden]);
  compare_op(rows, "L1.mlp_out", g_xout, all[kOut]);
  compare_op(rows, "final_ln_pool", g_pooled, pool_all);
  compare_op(rows, "head", g_logits, head_all);
  std::vector<double> out_ref, out_rms;
  for (int k = 0; k < nb; ++k) {
    out_ref.insert(out_ref.end(), e2e_out[k].begin(), e2e_out[k].end());
    out_rms.insert(out_rms.end(), e2e_out_rms[k].begin(), e2e_out_rms[k].end());
  }
  compare_e2e(rows, "L1.output(images)", g_xout, out_ref, out_rms);
  compare_e2e(rows, "logits(images)", g_logits, std::vector<double>(ref_logits.begin(), ref_logits.begin() + (size_t)nl * C),
              std::vector<double>(logit_rms.begin(), logit_rms.begin() + (size_t)nl * C));
  rep.passed = std::all_of(rows.begin(), rows.end(), [](const CheckRow& r) { return r.passed; });
  rep.argmax_n = nl;
  for (int i = 0; i < nl; ++i)
    rep.argmax_agree += argmax(&g_logits[(size_t)i * C], C) == argmax(&ref_logits[(size_t)i * C], C);

  Json ex = Json::array();
  for (int k = 0; k < ne; ++k) {
    std::vector<double> ours(g_explain.begin() + (size_t)k * C, g_explain.begin() + (size_t)(k + 1) * C), ref, bound;
    for (int c = 0; c < C; ++c) {
      ref.push_back(ref_logits[(size_t)(nmax + k) * C + c]);
      bound.push_back(kWorstSigmas * kU * logit_rms[(size_t)(nmax + k) * C + c]);
    }
    ex.add(Json::object().set("index", Json::num(in.explain[k])).set("ours", Json::nums(ours))
               .set("ref", Json::nums(ref)).set("bound", Json::nums(bound)).done());
  }
  rep.explain_json = ex.done();
  print_rows(rows);
  std::printf("logits batch: top-1 of ours equals float64's on %d of %d images; reference %.1f s\n", rep.argmax_agree,
              rep.argmax_n, rep.ref_seconds);
  return rep;
}
