// cuda/kernels/stationary.cuh — the weight-stationary epoch k_stationary_epoch<CL, U>: ONE launch
// of G·CL blocks (one per SM) in thread-block clusters of CL trains a whole epoch of the recipe
// (784-256-10, batch <= 128), with each block's slice of the parameters and their velocity held on
// chip for the whole epoch. It is the kernel path `stationary` (cuda/paths/stationary_path.cu); the
// host side (shape choice from the device's co-resident cluster count, prepare, launch) is
// cuda/paths/stationary_path.cuh. The kernel's parts are in cuda/kernels/stationary/:
//   ops.cuh              constants, Slice, Args; the counter, cp.async, TF32 MMA and byte
//                        conversion primitives; the input packing kernel
//   layout.cuh           Cfg<CL, U> (derived constants, shared memory layout), Block<CL, U> (a
//                        block's place and pointers), Lanes (MMA lane coordinates, G's register
//                        fragments), Wf's index map
//   slice.cuh            the parameter slice loaded at launch and written back at the end
//   phases_forward.cuh   input staging, F1, F2, the release and the wait
//   phases_backward.cuh  S, D, G and the W2 update
// dev/stationary/ builds the variants measured on the way here (docs/PERFLOG.md says what each did
// and measured) and checks this kernel bitwise against its build of the same choices.
//
// Shape <CL, U>: U hidden units per cluster (a multiple of 4, as dev/stationary/'s CUDA-core forms
// need), G = ceil(256 / U) clusters, G·U >= 256 unit columns; the G·U − 256 columns past 256 are
// PAD units (instantiated: <8,16> G 16, <8,20> G 13 (4 pad), <4,12> G 22 (8 pad)).
//   cluster c  unit columns j in [U·c, U·c + U)
//   rank r     input rows k in [KS·r, KS·r + KS) of W1 for those units (KS = 784 / CL), and
//              their velocity; rank 0 also b1[units] (stored as row KS of its slice, so the GEMMs
//              treat b1 as the weight of an input that is 1 on every valid row);
//              owner of the W2 rows of units u ≡ r (mod CL) of the cluster and their velocity
//              (every block keeps a copy of the cluster's W2 rows, pushed by the owners);
//              batch rows [RPB·r, RPB·r + RPB) for every row-wise reduction (RPB = 128 / CL);
//   cluster 0, rank 0: b2 (a "unit" whose activation is 1) and the step loss.
//
// F1 and G run on the tensor cores (TF32 m16n8k8): the staged inputs are the pixel bytes p as
// floats (exact in TF32; b1's input is 255), every other float operand w is split into
// big = tf32(w) and small = tf32(w − big) and multiplied twice, and the 1/255 is applied to the
// products' sums (ops.cuh). k_stationary_epoch<CL, U, Products::kTF32> (the path stationary-tf32)
// multiplies the big parts only: TF32 products; <CL, U, Products::kBF16> (stationary-bf16) the
// operands rounded to bfloat16, which the TF32 instruction holds exactly: BF16 products. The rest
// of the epoch (F2, S, D's dH, the updates) is float32 in every form. G's warps keep the W1 slice and its velocity in registers for the
// whole epoch; F1 reads the slice from Wf, its B fragments, which G rewrites after each update.
//
// Pad units stay exactly 0 and never reach the real parameters. They start with W1 = b1 = 0,
// W2 row = 0 and velocity +0 (read as 0, never from memory). Then each step, by induction: their
// pre-activation partials are sums of x·(+0) with x >= 0 finite (pixels, the ones column), so +0;
// the sum of the partials is +0, ReLU gives H = +0, their logit terms fmaf(0, 0, z) = z change
// nothing; dH = 0 by the mask (h > 0 false); dW1 = Σ x·(+0) = +0, db1 likewise; the dW2 partials
// are fmaf(+0, dZ, g) from g = +0, i.e. sums of ±0 started at +0, so +0; then v = μ·(+0) − λ·(±0)
// = +0 and w = +0 + +0 = +0, bitwise (IEEE: x + y of zeros is −0 only when both are −0). The
// write-back skips columns >= 256. dev/stationary/stationary_epoch.cu checks that every pad
// entry of W1, b1, W2 and the velocities (pad_check) is bitwise 0 at the end of every epoch.
//
// One step (t), every dependency named:
//   F1  partial pre-activations of all rows from the block's K slice: warp w, rows [16w, 16w + 16)
//       x all U units over the whole slice; P_r pushed into the reducing block's Red (DSMEM
//       stores, slot r)
//   cluster.sync A
//   F2  own rows: A = Σ_slot P (slot order), H = ReLU(A); partial logits of the cluster's units
//       (+ b2 in cluster 0) -> global slot [t%2][c][row]; release-add on counter[rank] (two input
//       buffers: by warp 7, while warps 0-6 convert the next step's inputs, already in shared
//       memory as bytes, into floats in the other buffer)
//   WAIT  acquire counter[rank] >= base + G·(t+1): every cluster's rank-r block has written its
//       slot for the rows this block reduces (the one cross-SM dependency)
//   S   own rows: z = Σ_c slot[c] (cluster order), softmax, loss, dZ = (p − onehot)/nb
//   D   own rows: dH = dZ·W2ᵀ ⊙ (H > 0) pushed to every block of the cluster (as G's B
//       fragments); partial dW2, db2 and loss over own rows pushed to their owners
//   cluster.sync B
//   G   warps 0-6: dW1 slice = X[:, slice]ᵀ·dH (with db1 in rank 0's row KS) by m-tiles of 16
//       slice rows over the whole batch, the update in registers, the new slice to Wf; warp 7
//       meanwhile: owners sum the dW2 (db2, loss) partials in rank order, update, push the W2
//       copies (one input buffer: then the next step's conversion)
// The next step's inputs are staged as bytes by cp.async issued at the top of each step.
// Every sum has a fixed order, so reruns are bitwise identical; no float atomics.
//
// DSMEM buffers and the syncs that separate their writers from their readers (t = step):
//   Red   written F1(t+1) after B(t) | read F2(t) between A(t) and B(t)
//   dHf   written D(t) before B(t)   | read G(t) after B(t), before the reader's A(t+1)
//   W2red written D(t) before B(t)   | read by the owner in G(t), before its A(t+1)
//   Lred  written D(t) before B(t)   | read by cluster 0 rank 0 in G(t), before its A(t+1)
//   W2l   written G(t) after B(t)    | read F2/D of t (before B(t)) and of t+1 (after A(t+1))
// A writer of step t+1 passes A(t+1) (or B(t)) only after the reader arrived there, i.e. after
// the reader finished reading step t's contents; a reader of step t reads after the sync that
// follows the writes. Local buffers (Hs, dZs, lossS, Wf, Xs, Bb) are separated by __syncthreads.
#pragma once
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "kernels/stationary/layout.cuh"
#include "kernels/stationary/ops.cuh"
#include "kernels/stationary/phases_backward.cuh"
#include "kernels/stationary/phases_forward.cuh"
#include "kernels/stationary/slice.cuh"

namespace mlp {
namespace wstat {

// P: what F1 and G multiply (ops.cuh's Products): kSplit the FP32 form `stationary` (TF32 big +
// small, two MMAs a product), kTF32 `stationary-tf32` and kBF16 `stationary-bf16` (the big part
// alone in TF32 or BF16, one MMA).
template <int CL, int U, Products P = Products::kSplit>
__global__ void __launch_bounds__(kThreads, 1) k_stationary_epoch(Args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  // Thread-block clusters and distributed shared memory are sm_90+: the host never launches
  // this kernel below that (stationary_prepare returns UNSUPPORTED); it traps if one does.
  (void)a;
  __trap();
#else
  using C = Cfg<CL, U>;
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const Block<CL, U> B = this_block<CL, U>(cluster);
  load_slice(B, a);
  typename C::Regs wr, vr;  // G warps: their register elements of the W1 slice, its velocity
  const Lanes L = lanes_of(B.tid);
  init_fragments<P>(B, L, wr, vr);
  const int steps = (a.n + a.batch - 1) / a.batch;
  prefetch_epoch_inputs(B, a);
  if (steps > 0) stage_first_inputs(B, a);
  cluster.sync();  // every block of the cluster runs (DSMEM rule); init and step 0's inputs done

  unsigned* my_counter = a.counters + 32 * B.rank;
  for (int t = 0; t < steps; ++t) {
    const int base = t * a.batch, nb = min(a.batch, a.n - base), par = t & 1;
    const bool has_next = t + 1 < steps;
    const int nb_next = has_next ? min(a.batch, a.n - base - a.batch) : 0;
    const float* Xs = B.Xs0 + (C::kXBuf == 2 ? par : 0) * C::kXsF;  // this step's inputs
    const unsigned target = a.arrivals_base + (unsigned)(C::kClusters * (t + 1));
    if (has_next) stage_bytes<CL>(a, B.Bb, base + a.batch, nb_next, B.rank);  // lands during F1..S
    int ys[C::kPasses];  // labels of the rows this thread's S passes handle
    step_labels(B, a, base, nb, ys);

    f1_partials<P>(B, L, Xs);
    cluster.sync();  // A
    f2_hidden(B, nb);
    __syncthreads();
    f2_logits(B, a, nb, par);
    arrive(B, L, my_counter, has_next, nb_next, par);
    wait_arrivals(B, a, my_counter, target);
    s_softmax(B, a, nb, par, ys);
    __syncthreads();
    d_push<P>(B);
    cluster.sync();  // B
    typename C::Acc acc, acs;  // G's products with dH's big and small parts (here, not in G: see PERFLOG)
    g_update<P>(B, L, a, Xs, acc, acs, wr, vr, t, nb);
    if constexpr (C::kXBuf == 1) {
      if (has_next) {  // one input buffer: G is done reading it
        cp_async_wait_all();
        __syncthreads();
        convert_rows_p<CL>(B.Xs0, B.Bb, nb_next, B.rank);
      }
    }
    __syncthreads();
  }
  cluster.sync();  // no block exits while another may still push into its shared memory
  store_slice(B, L, a, wr, vr);
#endif
}

}  // namespace wstat
}  // namespace mlp
