package controller

// Elastic training: Paddle's launcher (python -m paddle.distributed.launch)
// runs elastic when PADDLE_MASTER is etcd://host:port. Every pod registers a
// heartbeat under /paddle/<PADDLE_JOB_ID>/ in that etcd, waits until between
// the bounds of PADDLE_NNODES=min:max peers are alive, and restarts its
// training processes whenever membership changes. The operator only gives
// the pods those variables and keeps the number of worker pods within the
// bounds (scaling, replacing failed workers: restart policy OnFailure by
// default); it writes nothing to etcd itself.
//
// What the pods get is shaped by four things Paddle 3.0.0's launcher does
// (docs/env-contract.md cites the lines):
//
//   - A rank from PADDLE_TRAINER_ID is kept for ever: ETCDMaster.sync_peers
//     places each pod at its rank in a list sized to the live pods, and
//     fails (IndexError) once a worker below the highest rank is gone. An
//     elastic pod gets no PADDLE_TRAINER_ID, so the launcher ranks the live
//     pods itself (validation.ElasticRankNames refuses a template's).
//   - A launcher starting clears every etcd key under /paddle/<job id>, a
//     key prefix: the keys of every job whose id that id is a prefix of too
//     (podcontract.ElasticJobID).
//   - The launcher restarts training at most PADDLE_MAX_RESTART times, 3 by
//     default, counting every membership change (podcontract.ElasticMaxRestart).
//   - The launcher takes "etcd://" off PADDLE_MASTER with Python's
//     str.strip, which removes characters, not a prefix (podcontract.LauncherEtcdHost).
