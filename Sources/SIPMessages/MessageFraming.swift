import Foundation

/// A message cut into its start line, header fields and body, before anything is interpreted.
struct FramedMessage {
    /// Whether the start line looks like a status line ("SIP/…"): decides between an error response and a drop.
    let looksLikeResponse: Bool
    /// The start line, decoded as UTF-8 (invalid bytes become U+FFFD).
    let startLine: String
    /// The header fields in order, unfolded.
    let fields: [SIPHeaderField]
    /// For each field, the bytes of its line(s) in `bytes` (without the final CRLF): what libosip2 gets to see.
    let fieldRanges: [Range<Int>]
    /// The whole input.
    let bytes: [UInt8]
    /// Where the body starts in `bytes` (after the empty line).
    let bodyStart: Int

    /// The octets after the empty line.
    var bodyCount: Int { bytes.count - bodyStart }
}

/// Byte-level framing (RFC 3261 §7): CRLF line ends, folding, `name: value` lines, the empty line, and the octet rules
/// Parley adds before any C code sees the input.
enum MessageFraming {
    private static let cr: UInt8 = 0x0D
    private static let lf: UInt8 = 0x0A

    /// Frames `data`: leading CRLFs (keep-alives, RFC 3261 §7.5) skipped; the header section must end with CRLFCRLF,
    /// use CRLF only, and carry control characters (NUL included) only as the escaped octet of a quoted-pair.
    static func frame(_ data: Data) throws(SIPParseError) -> FramedMessage {
        let bytes = data.withUnsafeBytes { [UInt8]($0) }
        var start = 0
        while start + 1 < bytes.count, bytes[start] == cr, bytes[start + 1] == lf { start += 2 }
        guard start < bytes.count else {
            throw SIPParseError(.emptyMessage, reason: "Empty message", isRequest: false)
        }
        let looksLikeResponse = hasPrefixIgnoringCase(bytes, at: start, "SIP/")
        let isRequest = !looksLikeResponse
        guard let headerEnd = endOfHeaderSection(bytes, from: start) else {
            throw SIPParseError(.unterminatedHeaderSection, reason: "Header section not terminated", isRequest: isRequest)
        }
        // Every CR and LF before the empty line must belong to a CRLF pair; the lines are cut at the pairs.
        guard let lines = lineRanges(bytes, from: start, to: headerEnd) else {
            throw SIPParseError(.bareLineBreak, reason: "Bare CR or LF in header section", isRequest: isRequest)
        }
        let startRange = lines[0]
        if bytes[startRange].contains(where: isControl) {
            let kind: SIPParseError.Kind = bytes[startRange].contains(0) ? .nulByte : .malformedStartLine
            throw SIPParseError(kind, reason: "Control character in start line", isRequest: isRequest)
        }
        let startLine = String(decoding: bytes[startRange], as: UTF8.self)
        // Read through an unsafe buffer: slices of it cost no reference counting, where every array slice of `bytes`
        // retained and released the array (a third of the framing's time went to that).
        let (fields, ranges) = try bytes.withUnsafeBufferPointer { buffer throws(SIPParseError) in
            try headerFields(buffer, lines: lines.dropFirst(), isRequest: isRequest)
        }
        return FramedMessage(
            looksLikeResponse: looksLikeResponse, startLine: startLine, fields: fields, fieldRanges: ranges, bytes: bytes,
            bodyStart: headerEnd + 4)
    }

    /// A header field being read: its name, where its value starts, its line(s), and its continuation lines (rare).
    private struct PendingField {
        var name: String
        var valueStart: Int
        var range: Range<Int>
        var folds: [Range<Int>] = []
    }

    /// The header fields on `lines` of `buffer`, unfolded, with the byte range of each.
    private static func headerFields(
        _ buffer: UnsafeBufferPointer<UInt8>, lines: ArraySlice<Range<Int>>, isRequest: Bool
    ) throws(SIPParseError) -> ([SIPHeaderField], [Range<Int>]) {
        var fields: [SIPHeaderField] = []
        var ranges: [Range<Int>] = []
        fields.reserveCapacity(lines.count)
        ranges.reserveCapacity(lines.count)
        var pending: PendingField?
        for line in lines {
            if SIPSyntax.isWhitespace(buffer[line.lowerBound]) {
                guard pending != nil else {
                    throw SIPParseError(.malformedHeaderLine, reason: "Continuation line before any header", isRequest: isRequest)
                }
                pending!.folds.append(line)
                pending!.range = pending!.range.lowerBound..<line.upperBound
                continue
            }
            if let field = pending {
                fields.append(try headerField(field, in: buffer, isRequest: isRequest, after: fields))
                ranges.append(field.range)
            }
            guard let colon = buffer[line].firstIndex(of: UInt8(ascii: ":")) else {
                throw SIPParseError(
                    .malformedHeaderLine, reason: "Header line without colon", isRequest: isRequest, headers: SIPHeaders(fields))
            }
            // The line starts with no whitespace (that is a continuation), so only the name's end is trimmed.
            let name = trimmed(UnsafeBufferPointer(rebasing: buffer[line.lowerBound..<colon]))
            guard !name.isEmpty, name.allSatisfy(SIPSyntax.isTokenByte) else {
                throw SIPParseError(
                    .malformedHeaderLine, reason: "Malformed header name", isRequest: isRequest, headers: SIPHeaders(fields))
            }
            pending = PendingField(name: String(decoding: name, as: UTF8.self), valueStart: colon + 1, range: line)
        }
        if let field = pending {
            fields.append(try headerField(field, in: buffer, isRequest: isRequest, after: fields))
            ranges.append(field.range)
        }
        return (fields, ranges)
    }

    /// The field `field` reads as: its value trimmed, folds joined by one SP (LWS), control octets refused; `fields`
    /// (those before it) name the message's headers in the error.
    private static func headerField(
        _ field: PendingField, in buffer: UnsafeBufferPointer<UInt8>, isRequest: Bool, after fields: [SIPHeaderField]
    ) throws(SIPParseError) -> SIPHeaderField {
        func make(_ value: UnsafeBufferPointer<UInt8>) throws(SIPParseError) -> SIPHeaderField {
            if let problem = controlProblem(in: value) {
                let readable = SIPHeaders(fields)
                switch problem {
                case .nul:
                    throw SIPParseError(.nulByte, reason: "NUL byte in header section", isRequest: isRequest, headers: readable)
                case .control:
                    let name = SIPHeaders.canonicalName(field.name)
                    throw SIPParseError(
                        .malformedHeader(name: name), reason: "Control character in \(name) header", isRequest: isRequest,
                        headers: readable)
                }
            }
            return SIPHeaderField(validatedName: field.name, value: String(decoding: value, as: UTF8.self))
        }
        guard let firstFold = field.folds.first else {
            return try make(trimmed(UnsafeBufferPointer(rebasing: buffer[field.valueStart..<field.range.upperBound])))
        }
        // LWS: whitespace around each fold is one SP.
        var unfolded = Array(buffer[field.valueStart..<firstFold.lowerBound - 2])
        for fold in field.folds {
            while let last = unfolded.last, SIPSyntax.isWhitespace(last) { unfolded.removeLast() }
            unfolded.append(0x20)
            unfolded += buffer[fold].drop(while: SIPSyntax.isWhitespace)
        }
        return try unfolded.withUnsafeBufferPointer { value throws(SIPParseError) in try make(trimmed(value)) }
    }

    /// The index of the CRLF that ends the last header line (the first of CRLFCRLF), or nil.
    private static func endOfHeaderSection(_ bytes: [UInt8], from start: Int) -> Int? {
        // From CR to CR with memchr (vectorised), where a Swift loop checked bounds on every byte.
        bytes.withUnsafeBufferPointer { buffer -> Int? in
            let base = buffer.baseAddress!
            var index = start
            while index + 3 < buffer.count {
                guard let found = memchr(base + index, Int32(cr), buffer.count - 3 - index) else { return nil }
                index = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                if buffer[index + 1] == lf, buffer[index + 2] == cr, buffer[index + 3] == lf { return index }
                index += 1
            }
            return nil
        }
    }

    /// The ranges of the lines between `start` and `end` (each without its CRLF), where `end` is the CR of the final
    /// CRLFCRLF; nil when a CR or LF in there is not part of a CRLF pair.
    private static func lineRanges(_ bytes: [UInt8], from start: Int, to end: Int) -> [Range<Int>]? {
        bytes.withUnsafeBufferPointer { buffer -> [Range<Int>]? in
            var lines: [Range<Int>] = []
            lines.reserveCapacity(32)
            var lineStart = start
            var index = start
            while index < end {
                let byte = buffer[index]
                if byte > cr {
                    index += 1
                } else if byte == cr {
                    // end + 1 is the LF of the final CRLF, so index + 1 is always inside the buffer.
                    guard buffer[index + 1] == lf else { return nil }
                    lines.append(lineStart..<index)
                    index += 2
                    lineStart = index
                } else if byte == lf {
                    return nil  // an LF not preceded by CR (a CR's own LF is stepped over above)
                } else {
                    index += 1
                }
            }
            lines.append(lineStart..<end)
            return lines
        }
    }

    private enum ControlProblem { case nul, control }

    /// Control octets (NUL included) are allowed only as the second octet of a quoted-pair inside a quoted-string
    /// (RFC 3261 §25.1: quoted-pair = "\" (%x00-09 / %x0B-0C / %x0E-7F)). HTAB is whitespace, always allowed.
    private static func controlProblem(in value: UnsafeBufferPointer<UInt8>) -> ControlProblem? {
        // Nearly every value has no control octet at all: one plain pass says so.
        guard value.contains(where: isControl) else { return nil }
        var inQuotes = false
        var escaped = false
        for byte in value {
            if escaped {
                escaped = false
                continue
            }
            if isControl(byte) { return byte == 0 ? .nul : .control }
            if inQuotes, byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inQuotes.toggle()
            }
        }
        return nil
    }

    private static func isControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    private static func hasPrefixIgnoringCase(_ bytes: [UInt8], at start: Int, _ prefix: String) -> Bool {
        let expected = prefix.utf8
        guard bytes.count - start >= expected.count else { return false }
        return zip(bytes[start...], expected).allSatisfy { asciiLowercased($0) == asciiLowercased($1) }
    }

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    /// `bytes` without the whitespace at either end.
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var start = 0
        var end = bytes.count
        while start < end, SIPSyntax.isWhitespace(bytes[start]) { start += 1 }
        while end > start, SIPSyntax.isWhitespace(bytes[end - 1]) { end -= 1 }
        return UnsafeBufferPointer(rebasing: bytes[start..<end])
    }
}
