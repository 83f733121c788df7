//! The async runtime of the servers (`serve`, `rls`): how many threads serve
//! requests. One worker runs everything on one thread, as one nginx worker
//! does: no work stealing and no cross-thread wake-ups, which is what a
//! server pinned to one core wants.

use clap::Args;
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
        builder
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))
    }
}
