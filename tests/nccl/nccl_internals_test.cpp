// The NCCL group's pure parts, checked without a GPU: error classification and the exceptions it
// becomes, and the dtype/op mapping (built only with NCCL).
#include "ddp/nccl/errors.h"
#include "ddp/nccl/types.h"

#include <ddp/errors.h>

#include <gtest/gtest.h>

namespace {

using ddp::nccl_backend::FailureKind;

TEST(NcclErrors, ClassifiesResultsByWhoIsToBlame) {
  EXPECT_EQ(ddp::nccl_backend::classify(ncclRemoteError), FailureKind::kPeer);
  EXPECT_EQ(ddp::nccl_backend::classify(ncclSystemError), FailureKind::kPeer);
  EXPECT_EQ(ddp::nccl_backend::classify(ncclInvalidArgument), FailureKind::kConfig);
  EXPECT_EQ(ddp::nccl_backend::classify(ncclInvalidUsage), FailureKind::kConfig);
  EXPECT_EQ(ddp::nccl_backend::classify(ncclUnhandledCudaError), FailureKind::kInternal);
  EXPECT_EQ(ddp::nccl_backend::classify(ncclInternalError), FailureKind::kInternal);
}

TEST(NcclErrors, CheckNcclThrowsTheMappedTypeWithNcclsText) {
  try {
    ddp::nccl_backend::check_nccl(ncclRemoteError, nullptr, "NCCL allreduce #3", 2);
    FAIL();
  } catch (const ddp::PeerError& e) {
    EXPECT_EQ(e.rank(), 2);
    EXPECT_EQ(e.exit_code(), ddp::kExitPeerLost);
    std::string m = e.what();
    EXPECT_NE(m.find("NCCL allreduce #3: "), std::string::npos) << m;
    EXPECT_NE(m.find(ncclGetErrorString(ncclRemoteError)), std::string::npos) << m;
  }
  EXPECT_THROW(ddp::nccl_backend::check_nccl(ncclInvalidUsage, nullptr, "x", 0), ddp::ConfigError);
  try {
    ddp::nccl_backend::check_nccl(ncclInternalError, nullptr, "x", 0);
    FAIL();
  } catch (const ddp::Error& e) {
    EXPECT_EQ(e.exit_code(), ddp::kExitInternal);
  }
  EXPECT_NO_THROW(ddp::nccl_backend::check_nccl(ncclSuccess, nullptr, "x", 0));
  EXPECT_NO_THROW(ddp::nccl_backend::check_nccl(ncclInProgress, nullptr, "x", 0));
}

TEST(NcclErrors, TimeoutsAreTimeoutErrors) {
  EXPECT_THROW(ddp::nccl_backend::throw_error(FailureKind::kTimeout, "late", 0), ddp::TimeoutError);
  try {
    ddp::nccl_backend::throw_error(FailureKind::kTimeout, "late", 0);
  } catch (const ddp::Error& e) {
    EXPECT_EQ(e.exit_code(), ddp::kExitTimeout);
  }
}

TEST(NcclErrors, CudaFailuresNameTheCallAndCudasError) {
  try {
    ddp::nccl_backend::check_cuda(cudaErrorInvalidDevice, "cudaSetDevice(9)");
    FAIL();
  } catch (const ddp::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cudaSetDevice(9): cudaErrorInvalidDevice"), std::string::npos) << m;
  }
}

TEST(NcclTypes, ReductionsTakeTheSixGlooDtypes) {
  EXPECT_EQ(*ddp::nccl_backend::reduction_type(c10::ScalarType::Float), ncclFloat32);
  EXPECT_EQ(*ddp::nccl_backend::reduction_type(c10::ScalarType::Double), ncclFloat64);
  EXPECT_EQ(*ddp::nccl_backend::reduction_type(c10::ScalarType::Half), ncclFloat16);
  EXPECT_EQ(*ddp::nccl_backend::reduction_type(c10::ScalarType::BFloat16), ncclBfloat16);
  EXPECT_EQ(*ddp::nccl_backend::reduction_type(c10::ScalarType::Int), ncclInt32);
  EXPECT_EQ(*ddp::nccl_backend::reduction_type(c10::ScalarType::Long), ncclInt64);
  EXPECT_FALSE(ddp::nccl_backend::reduction_type(c10::ScalarType::Byte));
  EXPECT_FALSE(ddp::nccl_backend::reduction_type(c10::ScalarType::Bool));
  EXPECT_EQ(ddp::nccl_backend::reduction_op(ddp::ReduceOp::kAvg), ncclAvg);
  EXPECT_EQ(ddp::nccl_backend::reduction_op(ddp::ReduceOp::kMin), ncclMin);
  EXPECT_EQ(ddp::nccl_backend::reduction_op(ddp::ReduceOp::kMax), ncclMax);
  EXPECT_EQ(ddp::nccl_backend::reduction_op(ddp::ReduceOp::kSum), ncclSum);
  EXPECT_STREQ(ddp::nccl_backend::reduction_name(ddp::ReduceOp::kAvg), "avg");
}

}  // namespace
