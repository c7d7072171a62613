//! What this process holds, from `/proc/self/status` (Linux; 0 elsewhere).

/// This process's `field` of `/proc/self/status`, in MB.
pub(crate) fn status_mb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(&format!("{field}:")))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// This process's resident memory, in MB (Linux; 0 elsewhere).
pub(crate) fn resident_mb() -> f64 {
    crate::process::status_mb("VmRSS")
}
