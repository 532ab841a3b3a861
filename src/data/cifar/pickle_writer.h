#pragma once
// Writes CIFAR-10 Python batches as Python 2's cPickle wrote the published files: protocol 2, byte
// strings (SHORT_BINSTRING/BINSTRING), the image array as numpy.core.multiarray._reconstruct + BUILD.
// Python 3 reads them with pickle.load(f, encoding='latin1'), which is what torchvision does.
//
//   std::string bytes = ddp::data::cifar::cifar_batch_pickle("training batch 1 of 5", pixels, n, labels, names);

#include <cstdint>
#include <string>
#include <vector>

namespace ddp::data::cifar {

/// A batch dict {batch_label, labels, data (uint8 [n, 3072]), filenames} as a protocol-2 pickle.
std::string cifar_batch_pickle(const std::string& batch_label, const uint8_t* pixels, int64_t n,
                               const std::vector<uint8_t>& labels, const std::vector<std::string>& filenames);

/// batches.meta: {num_cases_per_batch, label_names, num_vis}.
std::string cifar_meta_pickle(int64_t num_cases_per_batch, const std::vector<std::string>& label_names);

}  // namespace ddp::data::cifar
