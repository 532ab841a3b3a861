// Images per second through the RANZCR input pipeline (read + grayscale decode + resize + augment +
// normalise into batch tensors) over a folder of JPEGs, with the thread-pool loader; also the same
// work without reduced-resolution decoding, on one thread, to show what DCT scaling buys.
//
//   bench_ranzcr_input --data DIR --image-size 224 --workers 2 --epochs 2
// DIR holds train.csv and train/ (make_ranzcr_synthetic --size 2048 writes one).
#include "data/ranzcr/image.h"
#include "data/ranzcr/loader.h"
#include "data/ranzcr/records.h"
#include "util/files.h"

#include <ddp/errors.h>

#include <cxxopts.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <chrono>
#include <iostream>
#include <numeric>

using namespace ddp::data::ranzcr;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  try {
    cxxopts::Options cli("bench_ranzcr_input", "RANZCR input pipeline throughput");
    cli.add_options()
        ("data", "folder with train.csv and train/", cxxopts::value<std::string>())
        ("image-size", "output side", cxxopts::value<int>()->default_value("224"))
        ("workers", "loader threads", cxxopts::value<int>()->default_value("2"))
        ("batch-size", "batch size", cxxopts::value<int64_t>()->default_value("32"))
        ("epochs", "passes over the images (the first one warms the page cache)", cxxopts::value<int>()->default_value("2"))
        ("full-decode-images", "images for the single-thread full-resolution decode comparison (0: skip)",
         cxxopts::value<int>()->default_value("16"));
    auto args = cli.parse(argc, argv);
    if (!args.count("data")) throw ddp::ConfigError("--data is required");
    const std::string dir = args["data"].as<std::string>();
    const int size = args["image-size"].as<int>();
    auto data = std::make_shared<Dataset>(read_train_csv(dir + "/train.csv"), dir + "/train");
    const int64_t n = static_cast<int64_t>(data->records.size());
    std::vector<int64_t> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), 0);

    BatchLoader loader(data, LoaderOptions()
                                 .batch_size(args["batch-size"].as<int64_t>())
                                 .image_size(size)
                                 .workers(args["workers"].as<int>())
                                 .augment(true));
    double best = 0;
    for (int e = 0; e < args["epochs"].as<int>(); ++e) {
      const auto t0 = Clock::now();
      loader.start_epoch(all, static_cast<uint64_t>(e));
      Batch b;
      int64_t images = 0;
      while (loader.next(&b)) images += b.images.size(0);
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      const double rate = images / s;
      best = std::max(best, rate);
      std::cout << "ours epoch " << e << ": " << images << " images in " << s << " s = " << rate << " images/s"
                << std::endl;
    }
    std::cout << "RESULT ours images_per_s=" << best << " image_size=" << size
              << " workers=" << args["workers"].as<int>() << std::endl;

    // Same steps without DCT-scaled decoding, one thread (for the record, not the comparison).
    const int m = std::min<int>(args["full-decode-images"].as<int>(), static_cast<int>(n));
    if (m > 0) {
      std::vector<float> out(static_cast<size_t>(size) * size);
      AugmentOptions aug;
      auto run = [&](bool reduced) {
        const auto t0 = Clock::now();
        for (int i = 0; i < m; ++i) {
          auto bytes = ddp::util::read_file_bytes(data->image_path(i));
          cv::Mat img;
          if (reduced) {
            img = decode_resized(bytes, size, "image");
          } else {
            cv::Mat full = cv::imdecode(cv::Mat(1, static_cast<int>(bytes.size()), CV_8UC1, bytes.data()),
                                        cv::IMREAD_GRAYSCALE);
            cv::resize(full, img, cv::Size(size, size), 0, 0, cv::INTER_AREA);
          }
          Rng rng = Rng::for_stream(0, 0, static_cast<uint64_t>(i));
          to_input(img, out.data(), &aug, &rng);
        }
        return m / std::chrono::duration<double>(Clock::now() - t0).count();
      };
      const double full = run(false), reduced = run(true);
      std::cout << "one thread: full-resolution decode " << full << " images/s, reduced decode " << reduced
                << " images/s (" << reduced / full << "x)" << std::endl;
    }
    return 0;
  } catch (const std::exception& e) {
    return ddp::report_and_exit_code(e);
  }
}
