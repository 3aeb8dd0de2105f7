//! A standalone sandbox worker: what [`toolgate_sandbox::WorkerPool`] starts when a host does not
//! re-execute itself (`WorkerCommand::program`). Speaks the pool's frame protocol on stdin/stdout.

fn main() {
    std::process::exit(toolgate_sandbox::worker_main());
}
