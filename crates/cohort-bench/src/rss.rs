//! Peak resident memory of this process, resettable between runs (Linux).

/// Resets the peak RSS counter (`VmHWM`) to the current RSS, after giving the allocator's
/// free memory back ([`trim_heap`]). Returns false where unsupported.
pub fn reset_peak() -> bool {
    trim_heap();
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Gives the memory the allocator holds free back to the system (glibc's `malloc_trim`), so
/// that a run's resident memory starts from what is in use: without it, what earlier
/// scenarios freed stays resident or not depending on where their last blocks sit in the
/// heap, and a memory row of `quick` moved by tens of MiB between two runs of one binary.
pub fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own arenas under their locks and takes no
    // pointer from us; it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The peak RSS since the last reset, in bytes.
pub fn peak_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The current RSS, in bytes.
pub fn current_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
