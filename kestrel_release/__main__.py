from kestrel_release.cli import main

main()
