//! The async runtime of the servers (`serve`, `rls`): how many threads serve
//! requests. One worker runs everything on one thread, as one nginx worker
//! does: no work stealing and no cross-thread wake-ups, which is what a
//! server pinned to one core wants. `serve --runtime per-core` runs that
//! on each of its workers, each accepting for itself.

use clap::{Args, ValueEnum};
use limits_server::Runtimes;
use std::num::NonZeroUsize;
use tokio::runtime::{Builder, Runtime};

/// The servers' `--workers` flag.
#[derive(Args, Debug)]
pub struct RuntimeArgs {
    /// Threads serving requests (default: one per CPU this process may run
    /// on). 1 serves everything on one thread, like one nginx worker.
    #[arg(long, value_name = "N", value_parser = crate::args::parse_workers)]
    workers: Option<NonZeroUsize>,
}

/// How `serve` spreads its connections over its workers (`--runtime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RuntimeKind {
    /// One runtime for all workers (tokio's multi-thread one): any worker
    /// may serve any connection, taking work from the others.
    Shared,
    /// A runtime of one thread per worker, each with its own listening
    /// socket, serving the connections it accepted (and their upstream
    /// connections) to their end, as nginx's workers do.
    PerCore,
}

impl RuntimeArgs {
    /// The runtime these flags ask for.
    pub fn build(&self) -> Result<Runtime, String> {
        let mut builder = match self.workers.map(NonZeroUsize::get) {
            Some(1) => Builder::new_current_thread(),
            Some(n) => {
                let mut b = Builder::new_multi_thread();
                b.worker_threads(n);
                b
            }
            None => Builder::new_multi_thread(),
        };
        build(&mut builder)
    }

    /// For `serve` with `kind`: the runtime to run the server on, and where
    /// it serves its connections. Per core, the server's own runtime is one
    /// thread (signals, the admin listener, the sweeper: the workers are
    /// threads of the server's).
    pub fn for_serve(&self, kind: RuntimeKind) -> Result<(Runtime, Runtimes), String> {
        match kind {
            RuntimeKind::Shared => Ok((self.build()?, Runtimes::Caller)),
            RuntimeKind::PerCore => {
                // What tokio's multi-thread runtime takes as its default too.
                let workers = self.workers.unwrap_or_else(|| {
                    std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN)
                });
                let runtime = build(&mut Builder::new_current_thread())?;
                Ok((runtime, Runtimes::PerCore(workers)))
            }
        }
    }
}

fn build(builder: &mut Builder) -> Result<Runtime, String> {
    builder
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}
