//! Running a child process under a cap: read its output to the end keeping a bounded prefix,
//! and kill its whole process group. Shared by `bash` and the TOML command tools (`toolgate
//! exec`), so both have the same timeout and output behaviour.

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Read a stream to its end, keeping the first `cap` bytes and counting the rest (draining it
/// so the child never blocks on a full pipe).
pub async fn read_capped<R: AsyncRead + Unpin>(mut r: R, cap: usize) -> (Vec<u8>, usize) {
    let mut kept = Vec::new();
    let mut total = 0usize;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                total += n;
                if kept.len() < cap {
                    let take = n.min(cap - kept.len());
                    kept.extend_from_slice(&buf[..take]);
                }
            }
        }
    }
    (kept, total)
}

/// Kill a process group (the child was started as its leader).
pub fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid
        .and_then(|p| i32::try_from(p).ok())
        .and_then(Pid::from_raw)
    {
        // ESRCH (the group is gone already) is fine.
        let _ = kill_process_group(pid, Signal::KILL);
    }
}
