import HandoffAPI
import HandoffModel
import HandoffTLS

/// The account and device routes. Every handler's first line checks who is asking.
extension LocalAPIRouter {
    func getAccount(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        return .ok(try await services.accounts.info())
    }

    func createAccount(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        let create = request.body.readableBytes == 0 ? CreateAccountRequest() : try body(CreateAccountRequest.self, of: request)
        return .ok(try await services.accounts.create(create))
    }

    func joinAccount(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        let join = try body(JoinAccountRequest.self, of: request)
        let discovery = services.discovery
        return .ok(
            try await AccountJoiner.join(
                join, store: services.accounts, defaultPort: services.peerPort(), logger: logger,
                findInviter: { code in await discovery.findInviter(code: code, timeout: .seconds(10)) }
            )
        )
    }

    /// NDJSON: the code at once, then who joined, or that it expired. Hanging up cancels the invite.
    func invite(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        let (code, expiresAt, outcomes) = try await services.accounts.invite()
        let invites = services.accounts.invites
        let identity = JoinPSK(code: code).identity
        let first = InviteUpdate(invite: .init(code: code.text, expiresAt: expiresAt, port: services.peerPort()))
        let (updates, continuation) = AsyncStream.makeStream(of: InviteUpdate.self)
        let waiter = Task {
            continuation.yield(first)
            let outcome = await withTaskGroup(of: InviteBook.Outcome?.self) { group in
                group.addTask {
                    for await outcome in outcomes { return outcome }
                    return nil
                }
                group.addTask {
                    let wait = Timestamp.now().microseconds(until: expiresAt)
                    try? await Task.sleep(for: .microseconds(max(0, wait)))
                    return Task.isCancelled ? nil : .expired
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
            switch outcome {
            case .joined(let device): continuation.yield(InviteUpdate(joined: device))
            case .expired:
                invites.expire(identity)
                continuation.yield(InviteUpdate(expired: true))
            case nil: break
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in
            waiter.cancel()
            invites.cancel(identity)
        }
        return .ndjson(updates)
    }

    func sync(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        let sync = try body(SyncRequest.self, of: request)
        return .ok(
            try await AccountSync.sync(sync, store: services.accounts, links: services.links, directory: services.directory, defaultPort: services.peerPort())
        )
    }

    func peers(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        return .ok(PeersResponse(peers: await services.directory.all(), strangers: await services.directory.strangers, discovery: services.discovery.status))
    }

    func continueActivity(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        let ask = try body(ContinueRequest.self, of: request)
        return .ok(try await ContinueFlow.run(ask, services: services))
    }

    func devices(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        return .ok(try await services.accounts.devices())
    }

    func removeDevice(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        let id = String(request.path.dropFirst(LocalAPIRoute.devices.count + 1))
        let removed = try await services.accounts.revoke(PercentDecoding.decode(id))
        // Close its sessions now, and tell every connected device at once.
        await services.links.applyRevocations()
        return .ok(removed)
    }
}

enum PercentDecoding {
    /// `%20` and friends back to bytes; malformed escapes are left as they are.
    static func decode(_ text: String) -> String {
        var out: [UInt8] = []
        let b = Array(text.utf8)
        var i = 0
        while i < b.count {
            if b[i] == 0x25, i + 2 < b.count, let v = UInt8(String(decoding: b[(i + 1)...(i + 2)], as: UTF8.self), radix: 16) {
                out.append(v)
                i += 3
            } else {
                out.append(b[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
