# Makes generate-manual's mdoc (swift-argument-parser) render without warnings, and keeps the
# layout of the help text it came from: an empty line there is a paragraph break here (.Pp,
# where mdoc rejects empty input lines), and lines indented by two spaces — the exit-status table,
# examples — stay as they are, in a literal display, instead of being filled into one paragraph.
#   awk -f scripts/tidy-manual.awk handoffctl.1 > handoffctl.1.tidy
function close_display() {
  if (in_display) { print ".Ed"; in_display = 0 }
}
/^$/ {
  close_display()
  print ".Pp"
  next
}
/^  / && !/^\./ {
  if (!in_display) { print ".Bd -literal -offset indent"; in_display = 1 }
  sub(/^  /, "")
  print
  next
}
{
  close_display()
  print
}
END { close_display() }
