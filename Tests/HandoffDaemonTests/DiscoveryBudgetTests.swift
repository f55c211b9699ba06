import Testing
@testable import HandoffDiscovery

/// What a link full of strangers may cost: table tests of `DiscoveryBudget`, the decisions behind
/// every avahi ref `DNSSDDiscovery` holds.
struct DiscoveryBudgetTests {
    typealias Action = DiscoveryBudget.Action
    let t0 = ContinuousClock.now

    static func instance(_ name: String) -> ServiceInstance { ServiceInstance(name: name, domain: "local.") }
    static let ours = TXTRecord([("v", Array("1".utf8)), ("o", Array("ours".utf8))])
    static let theirs = TXTRecord([("v", Array("1".utf8)), ("o", Array("theirs".utf8))])
    static func interest(_ instance: ServiceInstance, _ txt: TXTRecord) -> Bool { txt.string("o")?.hasPrefix("ours") ?? false }

    func limits(resolving: Int = 2, followed: Int = 2, remembered: Int = 3, known: Int = 6) -> DiscoveryBudget.Limits {
        var l = DiscoveryBudget.Limits()
        l.maximumResolving = resolving
        l.maximumFollowed = followed
        l.maximumRemembered = remembered
        l.maximumKnown = known
        return l
    }

    @Test func resolvesAFewAtATimeInTheOrderSeen() {
        var b = DiscoveryBudget(limits: limits())
        let (x, y, z) = (Self.instance("x"), Self.instance("y"), Self.instance("z"))
        #expect(b.appeared(x, now: t0) == [.resolve(x)])
        #expect(b.appeared(y, now: t0) == [.resolve(y)])
        #expect(b.appeared(z, now: t0) == [], "two resolving already")
        #expect(b.appeared(x, now: t0) == [], "seen again on another interface: nothing new")
        #expect(b.resolved(x, txt: Self.theirs, interesting: false, now: t0) == [.resolve(z)])
        #expect(b.isRemembered(x) && b.followed.isEmpty)
        #expect(b.resolved(y, txt: Self.ours, interesting: true, now: t0) == [.follow(y)])
        #expect(b.resolved(x, txt: Self.ours, interesting: true, now: t0) == [], "an answer nobody waits for")
    }

    @Test func aResolveThatTakesTooLongIsGivenUpAndTriedWhenSeenAgain() {
        var b = DiscoveryBudget(limits: limits(resolving: 1))
        let (x, y) = (Self.instance("x"), Self.instance("y"))
        _ = b.appeared(x, now: t0)
        _ = b.appeared(y, now: t0)
        #expect(b.nextDeadline == t0 + .seconds(5))
        #expect(b.tick(now: t0 + .seconds(4)) == [])
        #expect(b.tick(now: t0 + .seconds(5)) == [.cancelResolve(x), .resolve(y)])
        #expect(b.tracks(x), "still counted against maximumKnown")
        #expect(b.resolveFailed(y, now: t0) == [])
        #expect(b.appeared(x, now: t0) == [.resolve(x)], "browsing reported it again")
    }

    @Test func followsAtMostTheCapAndNeverACopy() {
        var b = DiscoveryBudget(limits: limits(resolving: 8, followed: 2))
        let names = (0..<4).map { Self.instance("m\($0)") }
        for n in names { _ = b.appeared(n, now: t0) }
        let a = TXTRecord([("o", Array("ours-a".utf8))])
        #expect(b.resolved(names[0], txt: a, interesting: true, now: t0) == [.follow(names[0])])
        #expect(b.resolved(names[1], txt: a, interesting: true, now: t0) == [], "a copy of a followed record")
        #expect(b.resolved(names[2], txt: TXTRecord([("o", Array("ours-c".utf8))]), interesting: true, now: t0) == [.follow(names[2])])
        #expect(b.resolved(names[3], txt: TXTRecord([("o", Array("ours-d".utf8))]), interesting: true, now: t0) == [], "over the cap")
        // One of ours leaves: the next one of ours takes its place.
        let after = b.disappeared(names[0], interest: Self.interest, now: t0)
        #expect(after.contains(.unfollow(names[0])))
        #expect(after.contains(.follow(names[1])) || after.contains(.follow(names[3])))
        #expect(b.followed.count == 2)
    }

    @Test func interestDecidesAndItsChangeIsAppliedToWhatWasSeen() {
        var b = DiscoveryBudget(limits: limits())
        let (x, y) = (Self.instance("x"), Self.instance("y"))
        _ = b.appeared(x, now: t0)
        _ = b.appeared(y, now: t0)
        _ = b.resolved(x, txt: Self.theirs, interesting: false, now: t0)
        _ = b.resolved(y, txt: Self.ours, interesting: true, now: t0)
        // A new secret: what we follow is now "theirs" (say, the account we joined).
        let swapped = b.interestChanged({ $1.string("o") == "theirs" }, now: t0)
        #expect(Set(swapped) == [.unfollow(y), .follow(x), .resolve(y)], "y is looked at again: its record may have changed")
        _ = b.resolved(y, txt: Self.ours, interesting: false, now: t0)
        // A followed record that changes to one we do not follow is dropped.
        #expect(b.txtChanged(x, txt: Self.ours, interest: { $1.string("o") == "theirs" }, now: t0) == [.unfollow(x)])
        #expect(b.followed.isEmpty)
    }

    @Test func aStrangerWhoseRecordChangedIsFollowedWhenTheInterestChanges() {
        // The inviter's record gains its join tag after we resolved it, and then we start joining.
        var b = DiscoveryBudget(limits: limits())
        let inviter = Self.instance("inviter")
        _ = b.appeared(inviter, now: t0)
        _ = b.resolved(inviter, txt: Self.theirs, interesting: false, now: t0)
        #expect(b.interestChanged({ $1.string("j") != nil }, now: t0) == [.resolve(inviter)])
        let withTag = TXTRecord([("v", Array("1".utf8)), ("j", Array("tag".utf8))])
        #expect(b.resolved(inviter, txt: withTag, interesting: true, now: t0) == [.follow(inviter)])
    }

    @Test func failuresAreTriedAgainAndNothingResolvedIsForgotten() {
        var b = DiscoveryBudget(limits: limits(resolving: 4, followed: 2, remembered: 1, known: 10))
        let (x, y, z) = (Self.instance("x"), Self.instance("y"), Self.instance("z"))
        for n in [x, y, z] { _ = b.appeared(n, now: t0) }
        // x's resolve fails (avahi busy): tried again after retryAfter, without being browsed again.
        #expect(b.resolveFailed(x, now: t0) == [])
        #expect(b.nextDeadline == t0 + .seconds(5), "y and z still resolving")
        _ = b.resolved(y, txt: Self.theirs, interesting: false, now: t0)
        _ = b.resolved(z, txt: Self.theirs, interesting: false, now: t0)  // beyond maximumRemembered
        #expect(b.nextDeadline == t0 + .seconds(30))
        #expect(b.tick(now: t0 + .seconds(30)) == [.resolve(x)])
        _ = b.resolved(x, txt: Self.ours, interesting: true, now: t0 + .seconds(30))
        // Its TXT query fails: no longer followed, tried again later.
        #expect(b.followFailed(x, now: t0 + .seconds(31)) == [.unfollow(x)])
        #expect(b.followed.isEmpty)
        // Every one of them is looked at again when the interest changes, z too.
        let again = Set(b.interestChanged(Self.interest, now: t0 + .seconds(32)))
        #expect(again == [.resolve(x), .resolve(y), .resolve(z)])
    }

    @Test func addressQueriesEndAfterTheirLifetime() {
        var b = DiscoveryBudget(limits: limits())
        let x = Self.instance("x")
        _ = b.appeared(x, now: t0)
        _ = b.resolved(x, txt: Self.ours, interesting: true, now: t0)
        #expect(b.nextDeadline == t0 + .seconds(10))
        #expect(b.tick(now: t0 + .seconds(10)) == [.endAddressQueries(x)])
        #expect(b.nextDeadline == nil)
        #expect(b.followed == [x])
    }

    @Test func memoryIsBoundedHoweverManyInstancesAppear() {
        var b = DiscoveryBudget(limits: limits(resolving: 2, followed: 2, remembered: 3, known: 6))
        var now = t0
        for i in 0..<1000 {
            let n = Self.instance("forged\(i)")
            for action in b.appeared(n, now: now) {
                if case .resolve(let r) = action { _ = b.resolved(r, txt: Self.theirs, interesting: false, now: now) }
            }
            now += .milliseconds(1)
        }
        #expect(b.knownCount == 6)
        #expect(b.untracked == 994)
        #expect(b.resolvingCount <= 2)
        #expect(b.followed.isEmpty)
        // Each leaving frees room for one more.
        #expect(b.disappeared(Self.instance("forged0"), interest: Self.interest, now: now) == [])
        #expect(b.appeared(Self.instance("member"), now: now) == [.resolve(Self.instance("member"))])
    }
}
