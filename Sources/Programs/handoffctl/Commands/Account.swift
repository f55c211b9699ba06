import ArgumentParser

struct Account: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create, join and inspect the account that ties your devices together.",
        discussion: """
            An account is the set of your devices. Create it on one device, then on that device \
            run `handoffctl account invite` and type the code it prints into \
            `handoffctl account join` on each other device.
            """,
        subcommands: [
            AccountCreate.self, AccountInvite.self, AccountJoin.self, AccountShow.self, AccountSync.self, AccountRecoveryCode.self, AccountRecover.self,
            AccountTransferKey.self, AccountAcceptKey.self, AccountRotateKey.self, AccountLeave.self,
        ],
        defaultSubcommand: AccountShow.self
    )
}
