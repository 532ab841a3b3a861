#pragma once
// Which BLAS LibTorch's matmuls run on, and one thread count for LibTorch and that BLAS.
//
// Debian's LibTorch calls whatever libblas.so.3 the alternatives system selects; the reference
// BLAS that a bare system gets is 15-20x slower on matmuls than OpenBLAS, so the trainers name it
// at startup (scripts/select-blas.sh picks OpenBLAS's OpenMP variant).
//
//   ddp::trainer::set_intra_op_threads(4);
//   DDP_LOG(INFO) << "BLAS " << ddp::trainer::blas_in_use().describe();

#include <string>

namespace ddp::trainer {

struct BlasInfo {
  std::string vendor;     ///< "OpenBLAS", "MKL", "BLIS", "reference BLAS", or "unknown"
  std::string version;    ///< the vendor's configuration string when it has one
  std::string threading;  ///< OpenBLAS: "openmp", "pthread" or "serial"; else ""
  std::string library;    ///< the file dgemm_ resolves to (symlinks followed); "" when not found
  /// OpenBLAS: the file that holds its engine (libopenblas.so.0). Debian's libblas.so.3 from an
  /// OpenBLAS variant is a front that loads libopenblas.so.0 through its own alternative, so the
  /// two can name different variants when both alternatives are not switched together.
  std::string engine;
  bool slow = false;      ///< the reference BLAS
  /// e.g. "OpenBLAS (OpenBLAS 0.3.21 ...) [openmp, /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3]".
  std::string describe() const;
};

/// Looks the BLAS up in the running process (dgemm_ through the dynamic linker, then each vendor's
/// own query functions), so it names what is loaded, not what is installed.
BlasInfo blas_in_use();

/// Logs a WARN saying how to get OpenBLAS when `blas` is the reference BLAS; nothing otherwise.
void warn_if_slow(const BlasInfo& blas);

/// at::set_num_threads(n), and OpenBLAS's own thread count too: its pthread and serial builds do
/// not read OpenMP's setting, so without this a budget of 1 could still run a matmul on every core.
void set_intra_op_threads(int n);

}  // namespace ddp::trainer
