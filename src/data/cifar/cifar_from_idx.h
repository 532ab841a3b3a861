#pragma once
// Real images into the CIFAR-10 layout: MNIST-style IDX files (Debian's dataset-fashion-mnist
// ships Fashion-MNIST's 70,000 28x28 grey photographs of clothes in /usr/share/datasets) become
// 32x32 three-channel records that train_cifar10 reads unchanged. Each image is centred on a black
// 32x32 canvas (Fashion-MNIST's background is black) and its grey value copied to R, G and B.
//
//   CifarRecords train = cifar_split_from_idx(read_idx_file(dir + "/train-images-idx3-ubyte.gz"),
//                                           read_idx_file(dir + "/train-labels-idx1-ubyte.gz"), 0, "train");

#include <cstdint>
#include <string>
#include <vector>

#include "data/cifar/cifar_layout_writer.h"
#include "data/idx/idx_file.h"

namespace ddp::data::cifar {

/// `images` must be [n][h][w] with 1 <= h, w <= 32 and `labels` [n] with values 0..9. `limit` > 0
/// keeps the first `limit` images. DataError naming `what` when shapes or labels do not fit.
CifarRecords cifar_split_from_idx(const IdxArray& images, const IdxArray& labels, int64_t limit, const std::string& what);

/// Fashion-MNIST's class names, in label order.
const std::vector<std::string>& fashion_mnist_class_names();

}  // namespace ddp::data::cifar
