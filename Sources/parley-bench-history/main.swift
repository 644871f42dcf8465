print("placeholder: parley-bench-history is being written")
