import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

/// The desktop's devices for calls (issue 49): a PulseAudio daemon of the test's own with two null sinks; a call on
/// device audio moved to the second sink by `setAudioDevice`, and back on the default, with `audioRouteChanged`, when
/// that sink goes away mid-call.
extension AudioInterop {
    @Suite("Interop: audio devices on a PulseAudio server", .serialized, .timeLimit(.minutes(2)))
    struct AudioDeviceTests {
        @Test("audioDevices lists both sinks; setAudioDevice moves the call to the second; a new default is announced; unloading the chosen sink brings the call back to the default, announced; an unknown id is invalidParams")
        func chooseAndLose() throws {
            let pulse = try PulseServer()
            defer { pulse.stop() }
            let loaded = try pulse.pactl(["load-module", "module-null-sink", "sink_name=parleytwo", "rate=48000", "channels=1"])
            let module = loaded.output.split(separator: "\n").first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? ""
            #expect(loaded.status == 0 && Int(module) != nil, "\(loaded.output)")
            let callee = try DesktopAudioTests.deviceParleyd(pulse, ["--auto-answer", "0", "--echo-cancel", "off", "--ringtone", "off"])
            let phone = try GroupControl(callee)
            let (caller, callerFolder) = try AudioInteropTests.parleyd(
                tone: 440, ["--call", "sip:parley@127.0.0.1:\(callee.port)", "--script", "wait 20000; end"])
            defer { try? FileManager.default.removeItem(at: callerFolder) }
            try callee.process.waitForLine("the call up") { $0.contains("→ joined") }
            let conversations = try phone.result(.list(ListParams()))["conversations"] as? [[String: Any]] ?? []
            let conversation = try #require(conversations.first?["uuid"] as? String, "\(conversations)")

            let listed = try phone.result(.audioDevices)["devices"] as? [[String: Any]] ?? []
            let sinks = listed.filter { $0["kind"] as? String == "sink" }.compactMap { $0["id"] as? String }
            #expect(sinks.contains(PulseServer.sink) && sinks.contains("parleytwo"), "\(listed)")

            let unknown = try phone.error(.setAudioDevice(SetAudioDeviceParams(conversation: conversation, sink: "nowhere")))
            #expect(unknown.code == "invalidParams", "\(unknown)")
            _ = try phone.result(.setAudioDevice(SetAudioDeviceParams(conversation: conversation, sink: "parleytwo")))
            Thread.sleep(forTimeInterval: 1)
            let moved = try pulse.recordSink(seconds: 2, sink: "parleytwo"), left = try pulse.recordSink(seconds: 1)
            print("devices: on parleytwo 440 Hz for \(moved.seconds(at: 440)) s of 2; on the default \(left.level(at: 440)) dB")
            #expect(moved.seconds(at: 440) >= 1.0, "the call plays on the chosen sink: \(moved.dominantFrequencies())")
            #expect(left.level(at: 440) < -40, "and no longer on the default")

            // A third sink, made the default: GStreamer 1.22 learns of a new default when the devices change.
            #expect(try pulse.pactl(["load-module", "module-null-sink", "sink_name=parleythree", "rate=48000", "channels=1"]).status == 0)
            #expect(try pulse.pactl(["set-default-sink", "parleythree"]).status == 0)
            let newDefault = try phone.nextEvent("audioRouteChanged", timeout: 8) { $0["conversation"] is NSNull && $0["sink"] as? String == "parleythree" }
            #expect(newDefault["reason"] as? String == "the default device changed", "\(newDefault)")
            #expect(try pulse.pactl(["set-default-sink", PulseServer.sink]).status == 0)
            #expect(try pulse.pactl(["unload-module", module]).status == 0)
            let route: [String: Any]
            do {
                route = try phone.nextEvent("audioRouteChanged", timeout: 8) { $0["conversation"] as? String == conversation }
            } catch {
                throw InteropError("\(error); parleyd said \(callee.process.lines.filter { $0.contains("audio") || $0.contains("device") || $0.contains("error") })")
            }
            #expect((route["reason"] as? String)?.contains("speaker went away") == true, "\(route)")
            Thread.sleep(forTimeInterval: 1)
            let back = try pulse.recordSink(seconds: 2)
            print("devices: back on the default, 440 Hz for \(back.seconds(at: 440)) s of 2")
            #expect(back.seconds(at: 440) >= 1.0, "the call goes on on the default: \(back.dominantFrequencies())")
            #expect(caller.transitions.first?.last != "left (mediaTimeout)")
        }
    }
}
