import Foundation
import SIPMessages

/// `application/dtmf-relay` bodies (the SIP INFO DTMF format of Cisco and most softphones).
enum DTMFRelay {
    static let contentType = SIPContentType(type: "application", subtype: "dtmf-relay")

    /// Whether a character is a DTMF signal.
    static func isSignal(_ character: Character) -> Bool { "0123456789*#ABCDabcd".contains(character) }

    /// The body for one digit: `Signal=5` and `Duration=160` (ms).
    static func body(for digit: Character) -> Data { Data("Signal=\(digit.uppercased())\r\nDuration=160\r\n".utf8) }

    /// The signal named in a received body, if any.
    static func signal(in body: Data) -> String? {
        let text = String(decoding: body.prefix(1024), as: UTF8.self)
        for line in text.split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "signal" else {
                continue
            }
            let value = parts[1].trimmingCharacters(in: .whitespaces)
            if value.count == 1, let character = value.first, isSignal(character) { return value }
        }
        return nil
    }
}
