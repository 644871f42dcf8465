import Glibc
import Synchronization
import Testing

@testable import ParleyIO
import ParleyTestSupport

/// The descriptor pair a test watches (a pipe: its read end and write end), closed by the test, never the watch.
private struct Pipe: Sendable {
    let read: Int32
    let write: Int32

    init() throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw IOError("pipe", code: errno) }
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        read = fds[0]
        write = fds[1]
    }

    func closeBoth() {
        close(read)
        close(write)
    }
}

@Suite("DescriptorWatch: readiness of a descriptor someone else owns")
struct DescriptorWatchTests {
    @Test("readable when written to, writable on request, silent after cancel; the descriptor stays open")
    func readiness() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let pipe = try Pipe()
        defer { pipe.closeBoth() }
        let events = EventRecorder<String>()
        let watches = loop.executeAndWait { () -> LoopBound<[DescriptorWatch]> in
            let reader = try! DescriptorWatch(
                loop: loop, fd: pipe.read, readable: true, writable: false,
                onReady: { ready in
                    var byte: UInt8 = 0
                    _ = Glibc.read(pipe.read, &byte, 1)
                    events.record("read \(ready.readable) \(ready.writable)")
                }, onLoopShutdown: { events.record("reader: loop shut down") })
            let writer = try! DescriptorWatch(
                loop: loop, fd: pipe.write, readable: false, writable: false,
                onReady: { ready in events.record("write \(ready.readable) \(ready.writable)") },
                onLoopShutdown: { events.record("writer: loop shut down") })
            return LoopBound([reader, writer], identity: loop.identity)
        }!
        var byte: UInt8 = 1
        #expect(write(pipe.write, &byte, 1) == 1)
        #expect(events.first() == "read true false")
        // The write end was silent until asked; asked once, it reports, then is told to stop.
        #expect(events.all.count == 1)
        loop.execute {
            let writer = watches.value[1]
            writer.update(readable: false, writable: true)
            loop.schedule(after: .milliseconds(1)) { writer.update(readable: false, writable: false) }
        }
        #expect(events.wait(for: 2)?.last == "write false true")
        _ = loop.executeAndWait { watches.value[0].cancel() }
        #expect(write(pipe.write, &byte, 1) == 1)
        // Cancelled: the loop turns (a timer fires) and the reader hears nothing; the pipe is still ours to read.
        let turned = EventRecorder<Bool>()
        loop.execute { loop.schedule(after: .milliseconds(20)) { turned.record(true) } }
        #expect(turned.first() == true)
        #expect(events.all.filter { $0.hasPrefix("read") }.count == 1)
        #expect(read(pipe.read, &byte, 1) == 1)
        // At shutdown only the live watch is told, once; neither descriptor is closed by the loop.
        loop.shutdown()
        #expect(events.all.filter { $0.contains("loop shut down") } == ["writer: loop shut down"])
        #expect(fcntl(pipe.read, F_GETFD) >= 0 && fcntl(pipe.write, F_GETFD) >= 0)
    }
}
