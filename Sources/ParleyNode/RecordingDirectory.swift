import Foundation
import Glibc
import Media
import ParleyEngine

/// The directory calls are recorded into (`--audio-sink file:DIR`), made ready at start-up (issue 48): created 0700
/// (parleyd's umask makes every recording 0600), an existing one of ours that others may open tightened to 0700 with
/// a log line, and the recordings a crash left unfinished completed (``WAVRepair``).
enum RecordingDirectory {
    static func prepare(_ directory: String, log: EngineLog) throws(MediaError) {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw MediaError("cannot create the recording directory \(directory): \(error.localizedDescription)")
        }
        var status = stat()
        if stat(directory, &status) == 0, status.st_uid == getuid(), status.st_mode & 0o077 != 0 {
            let was = String(status.st_mode & 0o777, radix: 8)
            if chmod(directory, 0o700) == 0 {
                log.info("the recording directory \(directory) was \(was) (open to others); it is now 700")
            }
        }
        let repaired = WAVRepair.repair(directory: directory)
        if !repaired.isEmpty {
            log.warning("completed \(repaired.count) recording\(repaired.count == 1 ? "" : "s") a crash left unfinished in "
                + "\(directory): \(repaired.joined(separator: ", "))")
        }
    }
}
