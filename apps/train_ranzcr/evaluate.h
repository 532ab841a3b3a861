#pragma once
// Forward passes over a list of records shared out across ranks without padding (rank r takes
// positions r, r + W, ...), gathered on every rank: validation and prediction.

#include "data/ranzcr/loader.h"
#include "models/resnet.h"

#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

namespace ddp {
class ProcessGroup;
}

namespace train_ranzcr {

struct Predictions {
  std::vector<int64_t> indices;  ///< record index of each row, all ranks, rank order
  std::vector<float> logits;     ///< [n, 11] row-major
  std::vector<float> targets;    ///< [n, 11]
  std::vector<uint8_t> valid;    ///< 0: image could not be decoded (--skip-bad-images)
  int64_t rows() const { return static_cast<int64_t>(indices.size()); }
};

/// This rank's share of `indices`: every world-th entry from `rank` on.
std::vector<int64_t> strided_share(const std::vector<int64_t>& indices, int rank, int world);

/// Runs `net` (eval mode, no grad, bf16 autocast when `amp`) over this rank's share of `indices`
/// through `loader`, and gathers every rank's rows. Collective.
Predictions predict_all(ddp::models::ResNet& net, ddp::data::ranzcr::BatchLoader& loader,
                        const std::vector<int64_t>& indices, ddp::ProcessGroup& pg, const c10::Device& device,
                        bool amp);

}  // namespace train_ranzcr
