import Foundation
import Media

/// `parley-bench-gate [PACKETS]`: the receive gate's cost per packet (issue 48). PACKETS buffers as udpsrc makes them
/// (an RTP packet's 172 bytes with the sender's address), half from the accepted source and half from a stranger,
/// go through the gate's check; the baseline, in the same run, is making them. Five rounds; the median of each is
/// printed, with their ratio. The last line is `gate_ns_per_packet: X`.
let packets = CommandLine.arguments.count > 1 ? max(1_000, Int(CommandLine.arguments[1]) ?? 1_000_000) : 1_000_000

func nanoseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
}

var making: [Double] = [], gate: [Double] = []
for _ in 0..<5 {
    let round = try ReceiveGateBenchmark.run(packets: packets)
    guard round.passed == (packets + 1) / 2 else { fatalError("the gate passed \(round.passed) of \(packets), expected half") }
    making.append(nanoseconds(round.making) / Double(packets))
    gate.append(nanoseconds(round.gate) / Double(packets))
}
let medianMaking = making.sorted()[2], medianGate = gate.sorted()[2]
print(String(format: "making a packet's buffer (baseline): %.1f ns", medianMaking))
print(String(format: "the gate's check: %.1f ns a packet (%.2fx the baseline)", medianGate, medianGate / medianMaking))
print(String(format: "gate_ns_per_packet: %.1f", medianGate))
