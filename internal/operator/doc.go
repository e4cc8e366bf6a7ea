// Package operator is the PaddleJob operator, the first of paddlejob's three
// products. Its packages:
//
//   - controller: the reconciler, one feature per file (intranet, restart,
//     cleanup, suspend, gang scheduling, elastic), each with its unit test;
//   - webhook: defaulting and validation of PaddleJobs before they are stored;
//   - this package: the manager wiring. The operator binary, the local cluster
//     and the integration tests all start it through Run or NewManager, so
//     they run the same thing.
package operator
