// VitePress site configuration (docs/.vitepress/config.mjs), an ES module.
// Reference: https://vitepress.dev/reference/site-config
// Run with: npx vitepress dev docs

import { defineConfig } from "vitepress";

const repository = "{{repository_url}}";

export default defineConfig({
  title: "{{site_name}}",
  description: "{{description}}",
  lang: "{{language}}",
  // The path the site is served under: starts and ends with "/".
  base: "{{base_path}}",
  cleanUrls: true,
  lastUpdated: true,
  sitemap: { hostname: "{{site_url}}" },

  themeConfig: {
    nav: [
      { text: "Tutorials", link: "/tutorials/" },
      { text: "How-to guides", link: "/how-to-guides/" },
      { text: "Reference", link: "/reference/" },
      { text: "Explanation", link: "/explanation/" },
    ],
    sidebar: {
      "/tutorials/": [{ text: "Tutorials", items: [{ text: "Getting started", link: "/tutorials/getting-started" }] }],
      "/how-to-guides/": [{ text: "How-to guides", items: [] }],
      "/reference/": [{ text: "Reference", items: [] }],
      "/explanation/": [{ text: "Explanation", items: [] }],
    },
    // Local search ships with VitePress (MiniSearch); no external service.
    search: { provider: "local" },
    socialLinks: [{ icon: "github", link: repository }],
    editLink: {
      pattern: repository + "/edit/{{branch}}/docs/:path",
      text: "Edit this page",
    },
  },
});
