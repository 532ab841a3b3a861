#pragma once
// Umbrella header: everything a trainer needs.
//
//   #include <ddp/ddp.h>
//   auto pg = ddp::init_process_group();
//   ddp::DistributedDataParallel model(net, pg);

#include <ddp/checkpoint.h>
#include <ddp/comm_hooks.h>
#include <ddp/distributed_data_parallel.h>
#include <ddp/distributed_sampler.h>
#include <ddp/errors.h>
#include <ddp/init.h>
#include <ddp/logging.h>
#include <ddp/process_group.h>
#include <ddp/process_group_gloo.h>
#include <ddp/powersgd_hook.h>
#include <ddp/process_group_nccl.h>
#include <ddp/signals.h>
#include <ddp/store.h>
#include <ddp/sync_batch_norm.h>
#include <ddp/version.h>
#include <ddp/world_info.h>
#include <ddp/zero_redundancy_optimizer.h>
