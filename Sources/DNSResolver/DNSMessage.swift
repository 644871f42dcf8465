internal import CAres
import Glibc

/// The fixed fields of a DNS answer's resource records (RFC 1035 §4.1): owner name, type, TTL and where the data
/// lies, for the answer and authority sections; every name read by c-ares' `ares_expand_name` (compression and its
/// bounds are c-ares'). Bounds are checked on every field, so a truncated or lying message is an error, never a
/// read past its end.
struct DNSMessage {
    /// A record's fixed fields.
    struct Record {
        /// The owner name, in canonical form.
        var name: String
        var type: UInt16
        var ttl: UInt32
        /// The offset and length of the record's data in the message.
        var dataOffset: Int
        var dataLength: Int
        /// For a CNAME, the canonical name it points to.
        var target: String?
    }

    /// Why the message could not be read.
    struct Malformed: Error {
        var detail: String
    }

    /// Where a CNAME chain from the question leads.
    enum Chain {
        /// The names from the question to the last alias (the question alone when there is no CNAME).
        case chain([String])
        /// The chain returned to a name it passed (the names, the repeated one last).
        case loop([String])
        /// More than 16 aliases.
        case tooLong
    }

    static let cname: UInt16 = 5
    static let soa: UInt16 = 6

    let bytes: UnsafeBufferPointer<UInt8>
    private(set) var answers: [Record] = []
    private(set) var authority: [Record] = []

    init(_ bytes: UnsafeBufferPointer<UInt8>) throws(Malformed) {
        self.bytes = bytes
        guard bytes.count >= 12 else { throw Malformed(detail: "\(bytes.count) bytes, shorter than a DNS header") }
        let questions = Int(read16(4)), answerCount = Int(read16(6)), authorityCount = Int(read16(8))
        var offset = 12
        for index in 0..<questions {
            offset += try nameLength(at: offset, what: "question \(index + 1)") + 4
            guard offset <= bytes.count else { throw Malformed(detail: "question \(index + 1) runs past the end") }
        }
        for index in 0..<answerCount {
            answers.append(try record(at: &offset, what: "answer record \(index + 1) of \(answerCount)"))
        }
        // The authority section matters only for its SOA (negative caching); a message cut inside it still has
        // all its answers, so reading stops quietly there.
        for index in 0..<authorityCount {
            guard let next = try? record(at: &offset, what: "authority record \(index + 1)") else { break }
            authority.append(next)
        }
    }

    /// How long an empty answer or NXDOMAIN may be believed (RFC 2308 §5: the SOA's TTL, at most its MINIMUM).
    var negativeTTL: UInt32? {
        guard let soa = authority.first(where: { $0.type == Self.soa }), soa.dataLength >= 22 else { return nil }
        return min(soa.ttl, read32(soa.dataOffset + soa.dataLength - 4))
    }

    /// The CNAME chain from `name` through this answer's aliases.
    func cnameChain(from name: String) -> Chain {
        var aliases: [String: String] = [:]
        for record in answers where record.type == Self.cname {
            if let target = record.target, aliases[record.name] == nil { aliases[record.name] = target }
        }
        var chain = [DNSName.canonical(name)]
        while let next = aliases[chain[chain.count - 1]] {
            if chain.contains(next) { return .loop(chain + [next]) }
            chain.append(next)
            if chain.count > 17 { return .tooLong }
        }
        return .chain(chain)
    }

    private func record(at offset: inout Int, what: String) throws(Malformed) -> Record {
        let owner = try name(at: offset, what: what)
        offset += owner.length
        guard offset + 10 <= bytes.count else { throw Malformed(detail: "\(what) is cut off in its fixed fields") }
        let type = read16(offset), ttl = read32(offset + 4), length = Int(read16(offset + 8))
        offset += 10
        guard offset + length <= bytes.count else {
            throw Malformed(detail: "\(what) says \(length) bytes of data, \(bytes.count - offset) are left")
        }
        // RFC 2181 §8: a TTL with its top bit set means 0.
        var record = Record(
            name: owner.text, type: type, ttl: ttl > 0x7FFF_FFFF ? 0 : ttl, dataOffset: offset, dataLength: length, target: nil)
        if type == Self.cname { record.target = try name(at: offset, what: "the alias of \(what)").text }
        offset += length
        return record
    }

    private func nameLength(at offset: Int, what: String) throws(Malformed) -> Int {
        try name(at: offset, what: what).length
    }

    /// The (decompressed, canonical) name at `offset` and the bytes it takes there.
    private func name(at offset: Int, what: String) throws(Malformed) -> (text: String, length: Int) {
        guard offset < bytes.count, let base = bytes.baseAddress else { throw Malformed(detail: "\(what) is cut off") }
        var expanded: UnsafeMutablePointer<CChar>?
        var length = 0
        let status = ares_expand_name(base + offset, base, Int32(bytes.count), &expanded, &length)
        guard status == ARES_SUCCESS, let expanded else { throw Malformed(detail: "\(what) has a bad name") }
        defer { ares_free_string(expanded) }
        return (DNSName.canonical(String(cString: expanded)), length)
    }

    private func read16(_ offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    private func read32(_ offset: Int) -> UInt32 {
        UInt32(read16(offset)) << 16 | UInt32(read16(offset + 2))
    }
}
