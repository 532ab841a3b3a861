#pragma once
// Training and prediction of train_ranzcr on a started session (src/trainer/session.h).
//
//   return options.predict ? predict(options, session, amp) : train(options, session, amp);

#include "options.h"

#include "trainer/session.h"

namespace train_ranzcr {

/// The epoch loop with validation, checkpoints and the final model.pt. The exit code (143 after a stop signal).
int train(const Options& options, const ddp::trainer::Session& session, bool amp);
/// --predict: the submission file. The exit code.
int predict(const Options& options, const ddp::trainer::Session& session, bool amp);

}  // namespace train_ranzcr
