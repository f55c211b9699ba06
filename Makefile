# handoff — the whole set-up is `make run` and `make test` (README.md).
# Both install what is missing (as root, through apt-get) before building.

SWIFT        ?= swift
SWIFT_FLAGS  ?= --explicit-target-dependency-import-check error
PREFIX       ?= /usr/local
FUZZ_SECONDS ?= 300
FUZZ_SMOKE_SECONDS ?= 3
BIN_DEBUG     = .build/debug
BIN_RELEASE   = .build/release

.PHONY: all build build-tests release run test test-repeat deb test-package deps-deb deps-package fuzz fuzz-smoke bench deps-build deps-run deps-test clean help install install-files uninstall release-static

all: build

help:
	@echo "make run      install missing packages, build, start Avahi if needed, run handoffd"
	@echo "make test     install missing packages, build, run every test"
	@echo "make test-repeat N=10 [LOAD=1]  the suite N times, and how often each test failed"
	@echo "make build    debug build;  make release: release build"
	@echo "make fuzz     long fuzzing of the model decoders (FUZZ_SECONDS=$(FUZZ_SECONDS) each)"
	@echo "make bench    the benchmarks of docs/benchmarks.md (root: simulated hosts)"
	@echo "make deb      the Debian packages, in .build/deb (make test-package, as root, tries them)"
	@echo "make install  release build, then binaries, units, config, man pages, completions, firewall"
	@echo "              definitions under DESTDIR/PREFIX (PREFIX=$(PREFIX)); make uninstall removes them"

deps-build:
	@scripts/install-deps.sh build
deps-run:
	@scripts/install-deps.sh run
deps-test:
	@scripts/install-deps.sh test
deps-deb:
	@scripts/install-deps.sh deb
deps-package:
	@scripts/install-deps.sh package

build: deps-build
	$(SWIFT) build $(SWIFT_FLAGS)

release: deps-build
	$(SWIFT) build -c release $(SWIFT_FLAGS)

# Runs the daemon in the foreground on the user's default paths; Ctrl-C stops it. On first use it
# creates an account — or, with JOIN=CODE (from `handoffctl account invite` on another device),
# joins that one instead (a code that does not work stops it, saying why). ARGS are passed to
# handoffd (make run ARGS="--port 47811").
run: deps-run build
	@scripts/ensure-avahi.sh
	@echo "handoffctl is $(abspath $(BIN_DEBUG))/handoffctl; in another terminal: export PATH=\"$(abspath $(BIN_DEBUG)):\$$PATH\""
	exec $(BIN_DEBUG)/handoffd $(ARGS) $(if $(JOIN),--join '$(JOIN)',--create-account)

test: build-tests
	@# The failures again at the end, where a log cut to its last lines still shows them, and
	@# the slowest tests (docs/testing.md).
	{ $(SWIFT) test --skip-build; echo $$? > .build/test-status; } 2>&1 | tee .build/test.log; \
	status=$$(cat .build/test-status); \
	python3 scripts/test-report.py .build/test.log; \
	if [ "$$status" != 0 ]; then echo "== every failure line (all of it in .build/test.log):"; grep -E "✘|error:" .build/test.log | head -60; fi; \
	exit $$status
	$(MAKE) fuzz-smoke

build-tests: deps-test
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(SWIFT) build --product generate-manual

# The suite N times in a row (one build), then per test how often it failed and its first
# failure line; LOAD=1 keeps one core busy meanwhile (docs/testing.md).
N ?= 10
test-repeat: build-tests
	SWIFT=$(SWIFT) scripts/test-repeat.sh $(N)

# Millions of random and mutated encodings through the decoders: first the seeded generator of the
# unit test in a release build, then libFuzzer (coverage-guided, with AddressSanitizer) on every
# decoder of outside input, one target at a time, each from its committed seed corpus under fuzz/
# (docs/security.md, "Decoders under a fuzzer"). lld: gold fails on the sanitizers' symbols.
FUZZ_TARGETS = activity-decoder advert-decoder advert-txt invite-code peer-frames local-api-http config-file desktop-entry ndjson-events browser-messages zone-answer
FUZZ_BUILD = $(SWIFT) build -c release --product handoff-fuzz --scratch-path .build/fuzz \
	-Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
fuzz: deps-build
	HANDOFF_FUZZ_CASES=5000000 $(SWIFT) test -c release --filter DecoderFuzzTests
	$(FUZZ_BUILD)
	set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p .build/fuzz/corpus-$$t; \
	  .build/fuzz/release/handoff-fuzz $$t -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 .build/fuzz/corpus-$$t fuzz/corpus-$$t; \
	done

# What `make test` runs after the suites: every target for FUZZ_SMOKE_SECONDS on its corpus.
fuzz-smoke:
	$(FUZZ_BUILD)
	set -e; for t in $(FUZZ_TARGETS); do \
	  rm -rf .build/fuzz/smoke-$$t; mkdir -p .build/fuzz/smoke-$$t; \
	  .build/fuzz/release/handoff-fuzz $$t -max_total_time=$(FUZZ_SMOKE_SECONDS) -max_len=4096 -print_final_stats=1 \
	    .build/fuzz/smoke-$$t fuzz/corpus-$$t > .build/fuzz/smoke-$$t.log 2>&1 || { tail -40 .build/fuzz/smoke-$$t.log; exit 1; }; \
	  echo "fuzz $$t: $$(grep -h 'number_of_executed_units' .build/fuzz/smoke-$$t.log | tr -s ' ' | cut -d' ' -f2) runs, no crash"; \
	done

# The Debian packages (README, "Install"): .build/deb/handoff_VERSION_amd64.deb and
# webext-handoff_VERSION_all.deb, built by debian/rules with this machine's Swift toolchain, and
# checked by lintian (no error, no warning). `make test-package` (root) installs them into a fresh
# Debian 12 root with apt-get, runs them, the browsers with the extension, then removes and purges.
deb: deps-deb
	rm -rf .build/deb
	debian/rules clean
	debian/rules build
	fakeroot debian/rules binary
	debian/rules clean
	lintian --fail-on error,warning .build/deb/handoff_*.deb .build/deb/webext-handoff_*.deb

# Tries the packages `make deb` built (as root: `make deb && sudo make test-package`, so that the
# build stays yours).
test-package: deps-package
	scripts/test-package.sh .build/deb

# Tables for docs/benchmarks.md: release builds on two simulated hosts (root).
bench: deps-test
	python3 bench/propagation
	python3 bench/continue
	python3 bench/streams
	python3 bench/documents
	python3 bench/browser
	python3 bench/soak
	RIG_IP=4 python3 bench/liveness
	RIG_IP=6 python3 bench/liveness

# Installation. `make install` builds release binaries with the Swift standard library linked in
# (they run without the toolchain), then copies; `make install-files INSTALL_FROM=DIR` copies what
# DIR holds (the tests install a debug build into a DESTDIR). Every file installed is in
# INSTALLED, which `make uninstall` removes.
BINDIR       ?= $(PREFIX)/bin
DATADIR       = $(PREFIX)/share
UNITDIR_USER ?= $(PREFIX)/lib/systemd/user
UNITDIR      ?= $(PREFIX)/lib/systemd/system
# ufw reads application profiles from /etc/ufw/applications.d only; firewalld reads service files
# from /usr/lib/firewalld/services (the distribution's) and /etc/firewalld/services (the
# administrator's): whatever PREFIX, they go where their readers look.
UFW_DIR      ?= /etc/ufw/applications.d
FIREWALLD_DIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/firewalld/services,/etc/firewalld/services)
# XDG autostart reads $XDG_CONFIG_DIRS/autostart, /etc/xdg/autostart by default.
AUTOSTART_DIR ?= /etc/xdg/autostart
# Browsers read native messaging hosts installed for every user from fixed places (docs/browser.md):
# whatever PREFIX, the manifests go there (as the firewall definitions do). The extension itself
# goes where Debian's webext-* packages put theirs, unpacked, and a link to it where Debian's
# Chromium loads every extension at start and where Firefox ESR takes unsigned ones.
WEBEXT_DIR    = $(DATADIR)/webext/handoff
CHROMIUM_EXTENSIONS_DIR ?= /usr/share/chromium/extensions
MOZILLA_EXTENSIONS_DIR  ?= /usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}
FIREFOX_EXTENSION_ID = browser@handoff
CHROMIUM_HOSTS_DIR ?= /etc/chromium/native-messaging-hosts
CHROME_HOSTS_DIR   ?= /etc/opt/chrome/native-messaging-hosts
MOZILLA_HOSTS_DIR  ?= /usr/lib/mozilla/native-messaging-hosts
BROWSER_FILES = manifest.json background.js popup.html popup.js popup.css
INSTALL_FROM ?= $(BIN_RELEASE)
MANUAL_TOOL  ?= $(BIN_DEBUG)/generate-manual
INSTALLED = \
	$(BINDIR)/handoffd \
	$(BINDIR)/handoffctl \
	$(BINDIR)/handoff-desktop \
	$(BINDIR)/handoff-browser-host \
	$(addprefix $(WEBEXT_DIR)/,$(BROWSER_FILES)) \
	$(CHROMIUM_EXTENSIONS_DIR)/handoff \
	$(MOZILLA_EXTENSIONS_DIR)/$(FIREFOX_EXTENSION_ID) \
	$(DATADIR)/applications/org.handoff.browser-page.desktop \
	$(DATADIR)/applications/org.handoff.open-link.desktop \
	$(CHROMIUM_HOSTS_DIR)/org.handoff.browser.json \
	$(CHROME_HOSTS_DIR)/org.handoff.browser.json \
	$(MOZILLA_HOSTS_DIR)/org.handoff.browser.json \
	$(UNITDIR_USER)/handoffd.service \
	$(UNITDIR_USER)/handoff-desktop.service \
	$(AUTOSTART_DIR)/handoff-desktop.desktop \
	$(DATADIR)/applications/handoff-desktop.desktop \
	$(DATADIR)/dbus-1/interfaces/org.handoff.Desktop1.xml \
	$(DATADIR)/dbus-1/interfaces/org.handoff.Receiver1.xml \
	$(UNITDIR)/handoffd@.service \
	$(DATADIR)/doc/handoff/handoffd.toml \
	$(DATADIR)/man/man1/handoffctl.1 \
	$(DATADIR)/man/man1/handoff-desktop.1 \
	$(DATADIR)/man/man1/handoff-browser-host.1 \
	$(DATADIR)/man/man8/handoffd.8 \
	$(DATADIR)/bash-completion/completions/handoffctl \
	$(DATADIR)/zsh/site-functions/_handoffctl \
	$(DATADIR)/fish/vendor_completions.d/handoffctl.fish \
	$(UFW_DIR)/handoff \
	$(FIREWALLD_DIR)/handoff.xml

install: release-static
	$(MAKE) install-files

release-static: deps-build
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_FLAGS) --product handoffd
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_FLAGS) --product handoffctl
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_FLAGS) --product handoff-desktop
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_FLAGS) --product handoff-browser-host
	$(SWIFT) build --product generate-manual

install-files:
	install -D -m 0755 $(INSTALL_FROM)/handoffd $(DESTDIR)$(BINDIR)/handoffd
	install -D -m 0755 $(INSTALL_FROM)/handoffctl $(DESTDIR)$(BINDIR)/handoffctl
	install -D -m 0755 $(INSTALL_FROM)/handoff-desktop $(DESTDIR)$(BINDIR)/handoff-desktop
	install -D -m 0755 $(INSTALL_FROM)/handoff-browser-host $(DESTDIR)$(BINDIR)/handoff-browser-host
	install -D -m 0644 -t $(DESTDIR)$(WEBEXT_DIR) $(addprefix browser/,$(BROWSER_FILES))
	install -d $(DESTDIR)$(CHROMIUM_EXTENSIONS_DIR) '$(DESTDIR)$(MOZILLA_EXTENSIONS_DIR)'
	ln -sfnr $(DESTDIR)$(WEBEXT_DIR) $(DESTDIR)$(CHROMIUM_EXTENSIONS_DIR)/handoff
	ln -sfnr $(DESTDIR)$(WEBEXT_DIR) '$(DESTDIR)$(MOZILLA_EXTENSIONS_DIR)/$(FIREFOX_EXTENSION_ID)'
	install -d $(DESTDIR)$(DATADIR)/applications $(DESTDIR)$(CHROMIUM_HOSTS_DIR) $(DESTDIR)$(CHROME_HOSTS_DIR) $(DESTDIR)$(MOZILLA_HOSTS_DIR)
	sed 's|@BINDIR@|$(BINDIR)|g' packaging/browser/org.handoff.browser-page.desktop > $(DESTDIR)$(DATADIR)/applications/org.handoff.browser-page.desktop
	sed 's|@BINDIR@|$(BINDIR)|g' packaging/links/org.handoff.open-link.desktop > $(DESTDIR)$(DATADIR)/applications/org.handoff.open-link.desktop
	$(INSTALL_FROM)/handoff-browser-host manifest chromium --host $(BINDIR)/handoff-browser-host > $(DESTDIR)$(CHROMIUM_HOSTS_DIR)/org.handoff.browser.json.part
	mv $(DESTDIR)$(CHROMIUM_HOSTS_DIR)/org.handoff.browser.json.part $(DESTDIR)$(CHROMIUM_HOSTS_DIR)/org.handoff.browser.json
	$(INSTALL_FROM)/handoff-browser-host manifest chrome --host $(BINDIR)/handoff-browser-host > $(DESTDIR)$(CHROME_HOSTS_DIR)/org.handoff.browser.json.part
	mv $(DESTDIR)$(CHROME_HOSTS_DIR)/org.handoff.browser.json.part $(DESTDIR)$(CHROME_HOSTS_DIR)/org.handoff.browser.json
	$(INSTALL_FROM)/handoff-browser-host manifest firefox --host $(BINDIR)/handoff-browser-host > $(DESTDIR)$(MOZILLA_HOSTS_DIR)/org.handoff.browser.json.part
	mv $(DESTDIR)$(MOZILLA_HOSTS_DIR)/org.handoff.browser.json.part $(DESTDIR)$(MOZILLA_HOSTS_DIR)/org.handoff.browser.json
	chmod 0644 $(DESTDIR)$(DATADIR)/applications/org.handoff.browser-page.desktop $(DESTDIR)$(DATADIR)/applications/org.handoff.open-link.desktop \
	  $(DESTDIR)$(CHROMIUM_HOSTS_DIR)/org.handoff.browser.json \
	  $(DESTDIR)$(CHROME_HOSTS_DIR)/org.handoff.browser.json $(DESTDIR)$(MOZILLA_HOSTS_DIR)/org.handoff.browser.json
	install -d $(DESTDIR)$(UNITDIR_USER) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DATADIR)/man/man1 $(DESTDIR)$(DATADIR)/man/man8
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/handoffd.service > $(DESTDIR)$(UNITDIR_USER)/handoffd.service
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/handoffd@.service > $(DESTDIR)$(UNITDIR)/handoffd@.service
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/handoff-desktop.service > $(DESTDIR)$(UNITDIR_USER)/handoff-desktop.service
	chmod 0644 $(DESTDIR)$(UNITDIR_USER)/handoffd.service $(DESTDIR)$(UNITDIR)/handoffd@.service $(DESTDIR)$(UNITDIR_USER)/handoff-desktop.service
	install -D -m 0644 packaging/autostart/handoff-desktop.desktop $(DESTDIR)$(AUTOSTART_DIR)/handoff-desktop.desktop
	install -D -m 0644 packaging/autostart/handoff-desktop.desktop $(DESTDIR)$(DATADIR)/applications/handoff-desktop.desktop
	install -D -m 0644 -t $(DESTDIR)$(DATADIR)/dbus-1/interfaces Sources/Apps/DesktopAgent/Interfaces/org.handoff.Desktop1.xml Sources/Apps/DesktopAgent/Interfaces/org.handoff.Receiver1.xml
	install -D -m 0644 config/handoffd.toml $(DESTDIR)$(DATADIR)/doc/handoff/handoffd.toml
	$(MANUAL_TOOL) $(INSTALL_FROM)/handoffctl --section 1 -o $(DESTDIR)$(DATADIR)/man/man1
	awk -f scripts/tidy-manual.awk $(DESTDIR)$(DATADIR)/man/man1/handoffctl.1 > $(DESTDIR)$(DATADIR)/man/man1/handoffctl.1.tidy
	mv $(DESTDIR)$(DATADIR)/man/man1/handoffctl.1.tidy $(DESTDIR)$(DATADIR)/man/man1/handoffctl.1
	chmod 0644 $(DESTDIR)$(DATADIR)/man/man1/handoffctl.1
	install -m 0644 man/handoffd.8 $(DESTDIR)$(DATADIR)/man/man8/handoffd.8
	install -m 0644 man/handoff-desktop.1 man/handoff-browser-host.1 $(DESTDIR)$(DATADIR)/man/man1/
	install -d $(DESTDIR)$(DATADIR)/bash-completion/completions $(DESTDIR)$(DATADIR)/zsh/site-functions $(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	@# A completion is sourced, not run: no #! line (ArgumentParser writes one).
	$(INSTALL_FROM)/handoffctl --generate-completion-script bash | sed '1{/^#!/d}' > $(DESTDIR)$(DATADIR)/bash-completion/completions/handoffctl
	$(INSTALL_FROM)/handoffctl --generate-completion-script zsh > $(DESTDIR)$(DATADIR)/zsh/site-functions/_handoffctl
	$(INSTALL_FROM)/handoffctl --generate-completion-script fish > $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/handoffctl.fish
	install -D -m 0644 packaging/ufw/handoff $(DESTDIR)$(UFW_DIR)/handoff
	install -D -m 0644 packaging/firewalld/handoff.xml $(DESTDIR)$(FIREWALLD_DIR)/handoff.xml
	@# The handoff: link handler, as desktop-file-utils' trigger does for a package (not into a DESTDIR).
	@if [ -z "$(DESTDIR)" ] && command -v update-desktop-database >/dev/null; then update-desktop-database -q $(DATADIR)/applications; fi
	@echo "installed under $(DESTDIR)$(PREFIX). Start it: systemctl --user enable --now handoffd"
	@echo "and, for notifications in your desktop: systemctl --user enable --now handoff-desktop"
	@echo "Chromium (started as /usr/bin/chromium) and Firefox ESR load the browser extension at their next start (docs/browser.md)."
	@echo "(or, for a user on a headless machine: systemctl enable --now handoffd@USER)."
	@echo "With a firewall, open its port: sudo ufw allow handoff"
	@echo "  or: sudo firewall-cmd --reload && sudo firewall-cmd --permanent --add-service=handoff && sudo firewall-cmd --reload"

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	@# The extension where installs before 0.1.0's packaging put it.
	rm -f $(addprefix $(DESTDIR)$(DATADIR)/handoff/browser/,$(BROWSER_FILES))
	@# handoff's own directories, once empty; shared ones (the browsers', applications/) stay.
	rmdir --ignore-fail-on-non-empty $(addprefix $(DESTDIR),$(WEBEXT_DIR) $(DATADIR)/webext $(DATADIR)/handoff/browser $(DATADIR)/handoff $(DATADIR)/doc/handoff) 2>/dev/null || true

clean:
	rm -rf .build
