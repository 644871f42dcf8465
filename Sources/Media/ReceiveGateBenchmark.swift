import CGStreamer

/// The receive gate's cost per packet, for `parley-bench-gate` (Scripts/bench-media): the gate's check over packets
/// as udpsrc makes them (half from the accepted source, half from a stranger), beside the baseline of making those
/// buffers, the work udpsrc already does for each packet.
public enum ReceiveGateBenchmark {
    /// Times `packets` packets: making them, and the gate's check of them, and how many it passed.
    public static func run(packets: Int) throws(MediaError) -> (making: Duration, gate: Duration, passed: Int) {
        if let failure = GStreamer.failure { throw failure }
        var making: Int = 0, gate: Int = 0, passed: Int = 0
        guard parley_gst_gate_bench(Int32(packets), &making, &gate, &passed) == 0 else { throw MediaError("no packets to time") }
        return (.nanoseconds(making), .nanoseconds(gate), passed)
    }
}
