import Collaboration
import Foundation
import Testing

@Suite struct NonceStoreTests {
    let start = Date(timeIntervalSince1970: 1_796_119_200)
    func nonce(_ value: UInt8) -> [UInt8] { Array(repeating: value, count: 32) }

    @Test func aNonceIsGoodOnceWithinItsMinute() {
        var store = NonceStore()
        let expires = store.issue(nonce(1), scope: "c", now: start)
        #expect(expires == start.addingTimeInterval(60))
        #expect(store.consume(nonce(1), scope: "c", now: start.addingTimeInterval(59)) == .success(expires))
        #expect(store.consume(nonce(1), scope: "c", now: start.addingTimeInterval(59)) == .failure(.nonceReused))
        #expect(store.consume(nonce(2), scope: "c", now: start) == .failure(.nonceUnknown))
    }

    @Test func aNonceForOneCollaborationIsUnknownToAnother() {
        var store = NonceStore()
        _ = store.issue(nonce(1), scope: "c1", now: start)
        #expect(store.consume(nonce(1), scope: "c2", now: start) == .failure(.nonceUnknown))
        #expect(store.consume(nonce(1), scope: "c1", now: start) == .success(start.addingTimeInterval(60)))
    }

    @Test func anExpiredNonceSaysSoUntilItIsForgotten() {
        var store = NonceStore()
        _ = store.issue(nonce(1), scope: "c", now: start)
        _ = store.issue(nonce(2), scope: "c", now: start)
        #expect(store.consume(nonce(1), scope: "c", now: start.addingTimeInterval(60)) == .failure(.nonceExpired))
        #expect(store.consume(nonce(1), scope: "c", now: start.addingTimeInterval(61)) == .failure(.nonceReused))
        store.sweep(now: start.addingTimeInterval(119))
        #expect(store.remembered == 2)
        #expect(store.outstanding(now: start.addingTimeInterval(119)) == 0)
        store.sweep(now: start.addingTimeInterval(120))
        #expect(store.remembered == 0)
        #expect(store.consume(nonce(2), scope: "c", now: start.addingTimeInterval(120)) == .failure(.nonceUnknown))
    }

    @Test func theOldestNonceIsEvictedAtTheBound() {
        var store = NonceStore(ttl: 60, capacity: 3)
        for value in 1...4 { _ = store.issue(nonce(UInt8(value)), scope: "c", now: start.addingTimeInterval(Double(value))) }
        #expect(store.remembered == 3)
        #expect(store.consume(nonce(1), scope: "c", now: start.addingTimeInterval(5)) == .failure(.nonceUnknown))
        for value in 2...4 { #expect(store.consume(nonce(UInt8(value)), scope: "c", now: start.addingTimeInterval(5)).isSuccess) }
    }

    @Test func manyNoncesStayBoundedAndSweptOverTime() {
        var store = NonceStore(ttl: 60, capacity: 500)
        for second in 0..<5_000 {
            _ = store.issue(nonce(UInt8(second % 251)) + [UInt8(second >> 8), UInt8(second & 0xFF)], scope: "c", now: start.addingTimeInterval(Double(second) / 10))
            #expect(store.remembered <= 500)
        }
        store.sweep(now: start.addingTimeInterval(10_000))
        #expect(store.remembered == 0)
    }
}

extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}
