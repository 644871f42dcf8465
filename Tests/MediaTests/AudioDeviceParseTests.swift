@testable import Media
import Testing

/// The device monitor's lines read into devices, and which source is the sound server's echo canceller (what
/// `--echo-cancel auto` asks before running its own).
@Suite("Media: audio devices and the server's echo canceller")
struct AudioDeviceParseTests {
    /// What `parley_audio_devices` gave on a PulseAudio with a null sink and module-echo-cancel loaded on it.
    static let listed = """
        source\t0\tparleymic.monitor\tmonitor\tMonitor of Null Output
        source\t1\tparleymic.monitor.echo-cancel\tfilter\tMonitor of Null Output (echo cancelled with Null Output)
        source\t0\tparleytest.echo-cancel.monitor\tmonitor\tMonitor of Null Output (echo cancelled with Monitor of Null Output)
        sink\t1\tparleytest\t\tNull\tOutput
        sink\t0\t\tsound\tno id
        speaker\t0\tx\tsound\tunknown kind
        """

    @Test("each line is a device: kind, default, id, name (tabs after the fourth stay in the name); bad lines are skipped")
    func parses() {
        let devices = AudioDevice.parse(Self.listed)
        #expect(devices.map(\.id) == ["parleymic.monitor", "parleymic.monitor.echo-cancel", "parleytest.echo-cancel.monitor", "parleytest"])
        #expect(devices.map(\.isDefault) == [false, true, false, true])
        #expect(devices.last?.name == "Null\tOutput")
        #expect(devices.map(\.isEchoCanceller) == [false, true, false, false], "a canceller's monitor, or a sink, is none")
    }

    @Test("the server's canceller: module-echo-cancel's filter source by name or description, PipeWire's by name; never a monitor")
    func echoCancellers() {
        #expect(AudioDevice.isEchoCanceller(id: "alsa_input.pci.echo-cancel", deviceClass: "filter", name: "Mic"))
        #expect(AudioDevice.isEchoCanceller(id: "aec_source", deviceClass: "filter", name: "Built-in Audio (echo cancelled with Speakers)"))
        #expect(AudioDevice.isEchoCanceller(id: "echo-cancel-source", deviceClass: "", name: "Echo-Cancel Source"))
        #expect(!AudioDevice.isEchoCanceller(id: "alsa_input.pci.echo-cancel", deviceClass: "monitor", name: "Monitor"))
        #expect(!AudioDevice.isEchoCanceller(id: "remapped", deviceClass: "filter", name: "Remapped microphone"))
        #expect(!AudioDevice.isEchoCanceller(id: "alsa_input.usb", deviceClass: "sound", name: "USB headset"))
    }

    @Test("a call captures from its chosen source, else the default one; an unknown choice is no canceller")
    func capture() {
        let devices = AudioDevice.parse(Self.listed)
        #expect(AudioDevice.capturesFromEchoCanceller(chosen: nil, in: devices))
        #expect(!AudioDevice.capturesFromEchoCanceller(chosen: "parleymic.monitor", in: devices))
        #expect(AudioDevice.capturesFromEchoCanceller(chosen: "parleymic.monitor.echo-cancel", in: devices))
        #expect(!AudioDevice.capturesFromEchoCanceller(chosen: "gone", in: devices))
        #expect(!AudioDevice.capturesFromEchoCanceller(chosen: nil, in: []))
    }

    @Test("--echo-cancel: auto leaves a call to the server's canceller, on does not, off never cancels; both ends must be the device")
    func decision() {
        let auto = DeviceAudio(pulse: true, echoCancellation: .auto), on = DeviceAudio(pulse: true, echoCancellation: .on)
        let off = DeviceAudio(pulse: true, echoCancellation: .off)
        let installed = GStreamer.has("webrtcdsp") && GStreamer.has("webrtcechoprobe")
        #expect(auto.cancelsEcho(source: .device, sink: .device) == installed)
        #expect(!auto.cancelsEcho(source: .device, sink: .device, serverCancels: true))
        #expect(on.cancelsEcho(source: .device, sink: .device, serverCancels: true) == installed)
        #expect(!off.cancelsEcho(source: .device, sink: .device))
        #expect(!auto.cancelsEcho(source: .tone(hertz: 440), sink: .device))
        #expect(!off.leavesEchoToServer(source: .device, sink: .device, chosen: nil), "off asks nothing")
        #expect(!auto.leavesEchoToServer(source: .silence, sink: .device, chosen: nil), "not a device call")
    }
}
