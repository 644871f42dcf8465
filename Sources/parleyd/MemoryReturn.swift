import Foundation

/// What lets memory go back to the system after a burst of calls ends (issue 48). GLib 2.74 (Debian 12) keeps freed
/// GSlice blocks — GStreamer's per-buffer and per-event structures — in per-thread magazines and slabs it seldom gives
/// back (from GLib 2.76 GSlice is plain malloc anyway): `G_SLICE=always-malloc`, set before anything allocates
/// through GLib, took a callee's RSS 30 s after 160 calls ended from 128 MB to 103 MB (52 MB warm; BENCHMARKS.md).
/// The rest is jemalloc's freed pages, which an idle process keeps (docs/media.md).
enum MemoryReturn {
    /// Sets `G_SLICE` (a user's own stays); before anything else.
    static func configure() {
        setenv("G_SLICE", "always-malloc", 0)
    }
}
