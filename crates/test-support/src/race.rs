//! The outside attacker of the path race tests: a thread that swaps a directory and a
//! symbolic link (`renameat2(RENAME_EXCHANGE)`) as fast as it can while the test makes its calls.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use rustix::fs::{CWD, RenameFlags, renameat_with};

/// Swaps `real` and `swap` until [`Swapper::stop`].
pub struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    thread: JoinHandle<()>,
}

impl Swapper {
    /// Start swapping `real` (a directory) and `swap` (usually a link to an outside folder).
    ///
    /// # Panics
    /// The thread panics (and [`Swapper::stop`] with it) if a swap fails: the race would be void.
    pub fn start(real: PathBuf, swap: PathBuf) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
            std::thread::spawn(move || {
                let exchange = || {
                    renameat_with(CWD, &real, CWD, &swap, RenameFlags::EXCHANGE)
                        .unwrap_or_else(|e| panic!("swap failed: {e}"));
                };
                while !stop.load(Ordering::Relaxed) {
                    exchange();
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
                // Leave the real directory at `real` (an even number of swaps).
                if swaps.load(Ordering::Relaxed) % 2 == 1 {
                    exchange();
                }
            })
        };
        Self {
            stop,
            swaps,
            thread,
        }
    }

    /// Stop, wait for the thread, and return how many swaps it made.
    ///
    /// # Panics
    /// When the swapping thread panicked.
    pub fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Err(e) = self.thread.join() {
            std::panic::resume_unwind(e);
        }
        self.swaps.load(Ordering::Relaxed)
    }
}
