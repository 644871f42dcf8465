import Foundation
import Testing

@testable import Media

@Suite("Cameras and the sources a call may pick")
struct VideoDeviceTests {
    @Test("the monitor's lines: id and name (tabs in names kept as one field), blank ids and short lines dropped")
    func parse() {
        let text = "/dev/video0\tIntegrated Camera: Integrated C\n\tno id\n/dev/video2\n/dev/video4\tUSB\tWebcam\n"
        #expect(VideoDevice.parse(text) == [
            VideoDevice(id: "/dev/video0", name: "Integrated Camera: Integrated C"), VideoDevice(id: "/dev/video4", name: "USB\tWebcam"),
        ])
        #expect(VideoDevice.parse("").isEmpty)
    }

    @Test("a camera must be among the machine's, a file readable and not a folder; test patterns always go")
    func problems() throws {
        let cameras = [VideoDevice(id: "/dev/video0", name: "Camera")]
        #expect(VideoSource.camera(device: nil).problem(cameras: cameras) == nil)
        #expect(VideoSource.camera(device: nil).problem(cameras: []) == "there is no camera")
        #expect(VideoSource.camera(device: "/dev/video0").problem(cameras: cameras) == nil)
        #expect(VideoSource.camera(device: "/dev/video1").problem(cameras: cameras) == "there is no camera /dev/video1")
        #expect(VideoSource.test(pattern: "ball").problem(cameras: []) == nil)
        let file = FileManager.default.temporaryDirectory.appending(path: "parley-clip-\(UUID().uuidString).webm")
        try Data([1, 2, 3]).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(VideoSource.file(path: file.path).problem(cameras: []) == nil)
        #expect(VideoSource.file(path: FileManager.default.temporaryDirectory.path).problem(cameras: []) != nil)
        #expect(VideoSource.file(path: "/nonexistent/clip.webm").problem(cameras: []) == "there is no readable file /nonexistent/clip.webm")
    }
}
