internal import CLinux
import Glibc

/// Hears the kernel's default-route changes (an rtnetlink socket bound to the IPv4 and IPv6 route groups, watched on
/// a loop) and hands them on in batches: the first change starts a `settle` wait, and everything that came meanwhile
/// (a route replaced is a removal and an addition; a Wi-Fi roam is several) is delivered once. Loop-confined.
///
/// ```
///   RTM_NEWROUTE / RTM_DELROUTE ──► DefaultRouteChange.parse ──► (none: ignored)
///        │ some ──► pending ──(settle)──► onChange(pending) ──► pending emptied
/// ```
package final class RouteMonitor {
    private let loop: EventLoop
    private let fd: Int32
    private var watch: DescriptorWatch?
    private var pending: [DefaultRouteChange] = []
    private var timer: LoopTimer?
    private let settle: Duration
    private let onChange: ([DefaultRouteChange]) -> Void

    /// Opens the socket and starts watching on `loop` (call on its thread); throws when rtnetlink cannot be opened.
    package init(loop: EventLoop, settle: Duration = .seconds(1), onChange: @escaping ([DefaultRouteChange]) -> Void) throws(IOError) {
        precondition(loop.inEventLoop, "a route monitor starts on its loop")
        self.loop = loop
        self.settle = settle
        self.onChange = onChange
        let fd = clinux_open_route_socket()
        guard fd >= 0 else { throw IOError("an rtnetlink socket", code: -fd) }
        self.fd = fd
        do {
            watch = try DescriptorWatch(
                loop: loop, fd: fd, readable: true, writable: false,
                onReady: { [weak self] _ in self?.read() }, onLoopShutdown: { [weak self] in self?.watch = nil })
        } catch {
            close(fd)
            throw error
        }
    }

    /// Stops listening (idempotent).
    package func stop() {
        precondition(loop.inEventLoop, "a route monitor stops on its loop")
        guard let watch else { return }
        watch.cancel()
        self.watch = nil
        if let timer { loop.cancel(timer) }
        timer = nil
    }

    private func read() {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            // ENOBUFS: the kernel dropped messages (a burst): something changed, though not known what.
            if count < 0 && errno == ENOBUFS { return heard([]) }
            guard count > 0 else { return }
            let changes = DefaultRouteChange.parse(Array(buffer[0..<count]))
            if !changes.isEmpty { heard(changes) }
        }
    }

    private func heard(_ changes: [DefaultRouteChange]) {
        pending += changes
        guard timer == nil else { return }
        timer = loop.schedule(after: settle) { [weak self] in
            guard let self else { return }
            self.timer = nil
            let batch = self.pending
            self.pending = []
            self.onChange(batch)
        }
    }

    deinit {
        watch?.cancel()
        close(fd)
    }
}
