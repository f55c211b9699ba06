import Testing

@testable import handoffctl

/// Mistyped commands get the command they were probably meant to be.
@Suite struct CommandSuggestionTests {
    @Test(arguments: [
        (["contineu", "desk"], "handoffctl has no command \"contineu\"; did you mean handoffctl continue? (handoffctl --help lists them)"),
        (["--socket", "/tmp/x", "statsu"], "handoffctl has no command \"statsu\"; did you mean handoffctl status? (handoffctl --help lists them)"),
        (["account", "jion", "CODE"], "handoffctl account has no command \"jion\"; did you mean handoffctl account join? (handoffctl account --help lists them)"),
        (["devices", "remvoe", "laptop"], "handoffctl devices has no command \"remvoe\"; did you mean handoffctl devices remove? (handoffctl devices --help lists them)"),
        (["peer"], "handoffctl has no command \"peer\"; did you mean handoffctl peers? (handoffctl --help lists them)"),
    ])
    func closeMistakesGetTheCommand(arguments: [String], message: String) {
        #expect(CommandSuggestion.check(arguments, root: Handoffctl.self) == message)
    }

    @Test(arguments: [
        ["continue", "desk"], ["account"], ["devices", "rename", "laptop"], ["become-current", "--type", "a.b"], ["xyzzy"], ["--help"], ["help", "status"],
        ["account", "sync", "desk"], [],
    ])
    func knownOrFarWordsAreLeftToTheParser(arguments: [String]) {
        #expect(CommandSuggestion.check(arguments, root: Handoffctl.self) == nil)
    }

    @Test func swapsAndTyposAreOneOrTwoEdits() {
        #expect(CommandSuggestion.distance("contineu", "continue") == 1)
        #expect(CommandSuggestion.distance("stauts", "status") == 1)
        #expect(CommandSuggestion.distance("", "abc") == 3)
        #expect(CommandSuggestion.closest(to: "de", among: ["devices", "doctor"]) == nil, "ambiguous")
    }
}
