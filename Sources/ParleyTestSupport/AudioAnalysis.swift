import Foundation

/// What the audio tests check a recording by: its samples, read from a WAV file, and the dominant frequency of each
/// short window (a small FFT), so "the tone arrived" means the right frequency for long enough, not "a file exists".
public struct Recording: Sendable {
    /// The sample rate.
    public let sampleRate: Int
    /// Mono samples in −1…1 (the first channel of a multi-channel file).
    public let samples: [Double]

    /// Reads a 16-bit PCM WAV file (a header GStreamer's wavenc could not complete, its sizes 0, is read to the end).
    public init(wavAt path: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let bytes = [UInt8](data)
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
        guard bytes.count >= 12, bytes[0..<4] == [0x52, 0x49, 0x46, 0x46], bytes[8..<12] == [0x57, 0x41, 0x56, 0x45] else {
            throw RecordingError("\(path) is not a WAV file (\(bytes.count) bytes)")
        }
        var offset = 12
        var channels = 1
        var rate = 8_000
        var bits = 16
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            let size = u32(offset + 4)
            if id == "fmt ", offset + 24 <= bytes.count {
                channels = max(1, u16(offset + 10))
                rate = u32(offset + 12)
                bits = u16(offset + 22)
            } else if id == "data" {
                guard bits == 16 else { throw RecordingError("\(path): \(bits)-bit samples, not 16") }
                let start = offset + 8
                let end = size == 0 || start + size > bytes.count ? bytes.count : start + size
                let frame = 2 * channels
                var samples: [Double] = []
                samples.reserveCapacity((end - start) / frame)
                var at = start
                while at + frame <= end {
                    samples.append(Double(Int16(bitPattern: UInt16(u16(at)))) / 32_768)
                    at += frame
                }
                self.init(sampleRate: rate, samples: samples)
                return
            }
            offset += 8 + size + size % 2
        }
        throw RecordingError("\(path) has no data chunk")
    }

    /// A recording from samples.
    public init(sampleRate: Int, samples: [Double]) {
        self.sampleRate = sampleRate
        self.samples = samples
    }

    /// Its length in seconds.
    public var duration: Double { Double(samples.count) / Double(sampleRate) }

    /// The part between two times in seconds (clipped to the recording): what a stretch of a call sounded like.
    public func part(from start: Double, to end: Double) -> Recording {
        let first = min(samples.count, max(0, Int(start * Double(sampleRate))))
        let last = min(samples.count, max(first, Int(end * Double(sampleRate))))
        return Recording(sampleRate: sampleRate, samples: Array(samples[first..<last]))
    }

    /// The dominant frequency of each window of `windowSize` samples (a power of two), nil for a silent window.
    public func dominantFrequencies(windowSize: Int = 2_048) -> [Double?] {
        precondition(windowSize > 0 && windowSize & (windowSize - 1) == 0, "the window is a power of two")
        return stride(from: 0, to: samples.count - windowSize + 1, by: windowSize).map { start in
            let window = Array(samples[start..<start + windowSize])
            let power = window.reduce(0) { $0 + $1 * $1 } / Double(windowSize)
            guard power > 1e-6 else { return nil }
            return Spectrum.peak(of: window, sampleRate: Double(sampleRate))
        }
    }

    /// The level of the tone at `hertz` over the whole recording, in dB against a full-scale sine (0 dB; a sine of
    /// amplitude 0.5 is −6 dB): a Hann-windowed Goertzel filter, so a loud tone elsewhere does not leak into it.
    /// What a mix holds is read tone by tone this way (the dominant frequency names only the loudest).
    public func level(at hertz: Double) -> Double {
        let count = samples.count
        guard count > 1 else { return -.infinity }
        let coefficient = 2 * cos(2 * Double.pi * hertz / Double(sampleRate))
        var (previous, beforePrevious) = (0.0, 0.0)
        for (index, sample) in samples.enumerated() {
            let window = 0.5 - 0.5 * cos(2 * Double.pi * Double(index) / Double(count - 1))
            let current = sample * window + coefficient * previous - beforePrevious
            (beforePrevious, previous) = (previous, current)
        }
        let power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
        // The window's coherent gain is a half: a sine of amplitude A gives |X| = A·N/4.
        let amplitude = 4 * power.squareRoot() / Double(count)
        return 20 * log10(max(amplitude, 1e-12))
    }

    /// Seconds of the recording whose dominant frequency is within `tolerance` (a fraction) of `hertz`.
    public func seconds(at hertz: Double, tolerance: Double = 0.02, windowSize: Int = 2_048) -> Double {
        let matching = dominantFrequencies(windowSize: windowSize).filter { found in
            guard let found else { return false }
            return abs(found - hertz) <= hertz * tolerance
        }
        return Double(matching.count * windowSize) / Double(sampleRate)
    }
}

/// A recording that cannot be read.
public struct RecordingError: Error, CustomStringConvertible {
    /// Why.
    public let description: String

    init(_ description: String) { self.description = description }
}

/// A radix-2 FFT, just enough to find a window's strongest frequency.
enum Spectrum {
    /// The frequency of the strongest bin (Hann window, parabolic interpolation between bins).
    static func peak(of samples: [Double], sampleRate: Double) -> Double {
        let count = samples.count
        var real = samples.enumerated().map { index, value in
            value * (0.5 - 0.5 * cos(2 * Double.pi * Double(index) / Double(count - 1)))
        }
        var imaginary = [Double](repeating: 0, count: count)
        transform(&real, &imaginary)
        let magnitudes = (0..<count / 2).map { (real[$0] * real[$0] + imaginary[$0] * imaginary[$0]).squareRoot() }
        let best = (1..<magnitudes.count).max { magnitudes[$0] < magnitudes[$1] } ?? 1
        var offset = 0.0
        if best > 1, best + 1 < magnitudes.count {
            let (left, middle, right) = (magnitudes[best - 1], magnitudes[best], magnitudes[best + 1])
            let denominator = left - 2 * middle + right
            if denominator != 0 { offset = 0.5 * (left - right) / denominator }
        }
        return (Double(best) + offset) * sampleRate / Double(count)
    }

    /// In-place iterative Cooley–Tukey.
    static func transform(_ real: inout [Double], _ imaginary: inout [Double]) {
        let count = real.count
        var j = 0
        for i in 1..<count {
            var bit = count >> 1
            while j & bit != 0 {
                j ^= bit
                bit >>= 1
            }
            j |= bit
            if i < j {
                real.swapAt(i, j)
                imaginary.swapAt(i, j)
            }
        }
        var length = 2
        while length <= count {
            let angle = -2 * Double.pi / Double(length)
            for start in stride(from: 0, to: count, by: length) {
                for k in 0..<length / 2 {
                    let (wr, wi) = (cos(angle * Double(k)), sin(angle * Double(k)))
                    let (a, b) = (start + k, start + k + length / 2)
                    let tr = real[b] * wr - imaginary[b] * wi
                    let ti = real[b] * wi + imaginary[b] * wr
                    real[b] = real[a] - tr
                    imaginary[b] = imaginary[a] - ti
                    real[a] += tr
                    imaginary[a] += ti
                }
            }
            length <<= 1
        }
    }
}
