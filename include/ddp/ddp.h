#pragma once
// Umbrella header: everything a trainer needs.
//
//   #include <ddp/ddp.h>
//   auto pg = ddp::init_process_group();
//   ddp::DistributedDataParallel model(net, pg);

#include <ddp/errors.h>
#include <ddp/init.h>
#include <ddp/logging.h>
#include <ddp/process_group.h>
#include <ddp/process_group_gloo.h>
#include <ddp/process_group_nccl.h>
#include <ddp/store.h>
#include <ddp/world_info.h>
