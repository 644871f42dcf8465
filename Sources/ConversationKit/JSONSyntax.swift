import Foundation

/// Where a JSON document breaks, for error messages. Foundation's `JSONDecoder` on Linux reports only "not
/// valid JSON"; `JSONSerialization` names a character offset, which this turns into a line and column.
public enum JSONSyntax {
    /// `Invalid value at line 3, column 14` — nil when the data parses.
    public static func problem(in data: Data) -> String? {
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            return nil
        } catch {
            guard let message = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String else {
                return String(describing: error)
            }
            let trimmed = message.trimmingCharacters(in: CharacterSet(charactersIn: ". "))
            guard let range = trimmed.range(of: " around character "),
                let offset = Int(trimmed[range.upperBound...].prefix(while: \.isNumber)), offset <= data.count
            else { return trimmed }
            let before = data.prefix(offset)
            let line = before.count(where: { $0 == 0x0A }) + 1
            let column = offset - (before.lastIndex(of: 0x0A).map { $0 - data.startIndex + 1 } ?? 0) + 1
            return "\(trimmed[..<range.lowerBound]) at line \(line), column \(column)"
        }
    }
}
